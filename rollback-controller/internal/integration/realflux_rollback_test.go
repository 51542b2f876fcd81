package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// newGitServedFixture is a fixture whose repository git's own server serves: source-controller
// clones shallow, which the go-git test server does not serve. The promoter pushes there too.
func newGitServedFixture(t *testing.T) *fixture {
	t.Helper()
	testenv.SkipIfShort(t)
	f := &fixture{t: t, ctx: context.Background(), ns: fmt.Sprintf("rb-%d", time.Now().UnixNano())}
	_, err := env.Kube.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var url string
	f.repo, url = gittest.NewGitServedRepo(t, "app")
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"}, Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(f.ns).Create(f.ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: url, AllowInsecureLoopbackHTTP: true,
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: "app"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	paths, err := flux.CRDPaths()
	require.NoError(t, err)
	require.NoError(t, env.InstallCRDPaths(paths...))
	flux.Start(t, env, flux.Options{Namespace: f.ns})
	flux.CreateGitRepository(t, env, f.ns, "prod", flux.GitRepositorySpec{URL: url, Branch: "prod", Interval: time.Hour})
	return f
}

func webConfigMap(dry, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  dry: %q\n  image: %q\n", dry, image)
}

// hydrateWeb renders dry onto prod-next as the ConfigMap web running image, as a hydrator would.
func (f *fixture) hydrateWeb(dry, image string) {
	f.t.Helper()
	f.repo.SetBranch(f.t, "prod-next", f.repo.Branch(f.t, "prod"))
	sha := f.repo.CommitFiles(f.t, "prod-next", map[string]string{"hydrator.metadata": string(hydratorNote(dry)), "app.yaml": webConfigMap(dry, image)}, "hydrate "+dry[:7])
	f.repo.AddNote(f.t, "refs/notes/hydrator.metadata", sha, string(hydratorNote(dry)))
	f.refresh("hydrated " + dry)
}

// waitWeb waits until Flux applied dry (the ConfigMap web in the cluster names it) and returns
// the image it runs.
func (f *fixture) waitWeb(dry string) string {
	f.t.Helper()
	var cm *corev1.ConfigMap
	require.NoError(f.t, testenv.Wait(f.ctx, flux.ApplyTimeout, func(ctx context.Context) (bool, error) {
		var err error
		cm, err = env.Kube.CoreV1().ConfigMaps(f.ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && cm.Data["dry"] == dry, nil
	}), "Flux applies dry %s to the cluster", dry)
	return cm.Data["image"]
}

// judge reports the health of what Flux applied in prod on prod's active commit, as a health
// check would: the image web:bad fails.
func (f *fixture) judge(dry string) (image string) {
	f.t.Helper()
	image = f.waitWeb(dry)
	st := f.waitEnv("prod", "active on "+dry[:7], testenv.ActiveOn(dry))
	phase := success
	if image == "web:bad" {
		phase = failure
	}
	f.setStatus("health", st.Active.HydratedSHA, phase, "health of "+image)
	return image
}

// Rollback with real Flux: prod is applied by real source-controller and kustomize-controller
// (a 1h interval: each apply follows a requestedAt). A bad version's health fails on what Flux
// applied; the RollbackPolicy reverts prod in git; Flux applies the revert, and health recovers.
// The time from the first failing check to Flux having applied the healthy revision is logged.
func TestRealFluxAppliesTheRevertOfABadVersion(t *testing.T) {
	f := newGitServedFixture(t)
	d0 := f.dryCommit("initial")
	f.repo.CommitFiles(t, "prod", map[string]string{"hydrator.metadata": string(hydratorNote(d0)), "app.yaml": webConfigMap(d0, "web:0")}, "initial prod")
	flux.CreateKustomization(t, env, f.ns, "prod", flux.KustomizationSpec{GitRepository: "prod", TargetNamespace: f.ns, Interval: time.Hour})
	f.waitWeb(d0)
	f.strategy("prod")
	startPromoter(t, f.ns)
	startRollback(t, env.Config, f.ns, time.Second)
	f.policy(time.Second, time.Hour, time.Hour)

	d1 := f.dryCommit("web 1")
	f.hydrateWeb(d1, "web:1")
	require.Equal(t, "web:1", f.judge(d1))
	f.waitEnv("prod", "healthy on d1", healthyOn(d1))

	d2 := f.dryCommit("web bad")
	f.hydrateWeb(d2, "web:bad")
	require.Equal(t, "web:bad", f.judge(d2))
	failing := time.Now()
	badTip := f.repo.Branch(t, "prod")

	name := rollbackpolicy.RevertCommitName("prod", "prod", d2)
	rc := f.waitRevert(name, "merged", inPhase(rollbackv1alpha1.RevertMerged))
	assert.Equal(t, d1, rc.Status.TargetDrySHA)
	assert.Equal(t, "web:1", f.waitWeb(d1), "Flux applied the revert: the cluster runs web:1 again")
	restored := time.Since(failing)
	t.Logf("time to restore with real Flux, first failing check to the healthy revision applied: %s", restored.Round(time.Millisecond))

	// git: prod's tip is the revert, on top of the bad commit.
	tip := f.repo.Branch(t, "prod")
	assert.Equal(t, rc.Status.RevertSHA, tip)
	revert := f.repo.ReadCommit(t, tip)
	require.Len(t, revert.ParentHashes, 1)
	assert.Equal(t, badTip, revert.ParentHashes[0].String())

	// Health recovers: the check reads web:1 again, on the revert the promoter now sees active.
	f.refresh("after the rollback")
	assert.Equal(t, "web:1", f.judge(d1))
}
