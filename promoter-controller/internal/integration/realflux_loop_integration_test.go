package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

func envConfigMap(branch, dry string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-%s\ndata:\n  dry: %q\n", branch, dry)
}

// hydrateManifests renders dry onto <branch>-next as the ConfigMap app-<branch>, as a hydrator
// would, with its note.
func (f *fixture) hydrateManifests(dry string, branches ...string) {
	f.t.Helper()
	for _, b := range branches {
		f.repo.SetBranch(f.t, b+"-next", f.repo.Branch(f.t, b))
		sha := f.repo.CommitFiles(f.t, b+"-next", map[string]string{"app.yaml": envConfigMap(b, dry)}, "hydrate "+dry[:7])
		f.repo.AddNote(f.t, "refs/notes/hydrator.metadata", sha, string(hydratorNote(dry)))
	}
	f.refresh("hydrated " + dry)
}

// appliedDry is the dry SHA of the ConfigMap app-<branch> that Flux applied, "" before any.
func (f *fixture) appliedDry(branch string) string {
	cm, err := env.Kube.CoreV1().ConfigMaps(f.ns).Get(f.ctx, "app-"+branch, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["dry"]
}

func (f *fixture) waitApplied(branch, dry string) {
	f.t.Helper()
	require.NoError(f.t, testenv.Wait(f.ctx, flux.ApplyTimeout, func(context.Context) (bool, error) {
		return f.appliedDry(branch) == dry, nil
	}), "Flux applies %s's dry %s; the cluster has %q", branch, dry, f.appliedDry(branch))
}

// The promotion loop with real Flux: each environment branch is deployed by its own
// GitRepository and Kustomization (a 1h interval, so each apply follows the promoter's
// requestedAt); the promoter's merge into dev is applied by Flux; staging waits for the health of
// what Flux applied in dev, and once it passes, staging's merge is applied too.
func TestRealFluxAppliesEachPromotionAndDevHealthGatesStaging(t *testing.T) {
	f, url := newGitServedFixture(t)
	installFluxCRDs(t)
	d0 := f.dryCommit("initial")
	for _, b := range []string{"dev", "staging"} {
		f.repo.CommitFiles(t, b, map[string]string{"hydrator.metadata": string(hydratorNote(d0)), "app.yaml": envConfigMap(b, d0)}, "initial "+b)
	}
	flux.Start(t, env, flux.Options{Namespace: f.ns})
	for _, b := range []string{"dev", "staging"} {
		flux.CreateGitRepository(t, env, f.ns, b, flux.GitRepositorySpec{URL: url, Branch: b, Interval: time.Hour})
		flux.CreateKustomization(t, env, f.ns, b, flux.KustomizationSpec{GitRepository: b, TargetNamespace: f.ns, Interval: time.Hour})
		f.waitApplied(b, d0)
	}
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "staging"}}
	})
	startPromoter(t, env.Config, t.TempDir())

	d1 := f.dryCommit("bump image to 1.1")
	f.hydrateManifests(d1, "dev", "staging")
	f.waitApplied("dev", d1)
	dev := f.waitEnv("dev", "promoted to d1", testenv.PromotedTo(d1))
	staging := f.waitEnv("staging", "held until dev is healthy", blockedBy("health"))
	assert.Equal(t, d0, f.appliedDry("staging"), "staging still runs d0 in the cluster")
	assert.NotEqual(t, d1, staging.Active.DrySHA)

	// Health reads what Flux applied in dev, and reports it on dev's active commit.
	require.Equal(t, d1, f.appliedDry("dev"))
	f.setStatus("health", dev.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusSuccess)
	f.waitEnv("staging", "promoted to d1 once dev is healthy", testenv.PromotedTo(d1))
	f.waitApplied("staging", d1)
	assert.True(t, f.repo.IsAncestor(t, f.repo.Branch(t, "staging-next"), f.repo.Branch(t, "staging")), "git: staging holds the hydrated d1")
}
