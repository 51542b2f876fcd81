package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
)

const importSHA3 = "3333333333333333333333333333333333333333"

// strategyTracking creates a PromotionStrategy on the repository "app" whose staging environment
// proposes proposed over active, as the promoter would report them.
func strategyTracking(t *testing.T, ns, proposed, active string) *promoterv1alpha1.PromotionStrategy {
	t.Helper()
	ctx := context.Background()
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "staging"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return setTracked(t, ps, proposed, active)
}

func setTracked(t *testing.T, ps *promoterv1alpha1.PromotionStrategy, proposed, active string) *promoterv1alpha1.PromotionStrategy {
	t.Helper()
	ps.Status.Environments = []promoterv1alpha1.EnvironmentStatus{{
		Branch: "staging", Proposed: promoterv1alpha1.CommitState{HydratedSHA: proposed}, Active: promoterv1alpha1.CommitState{HydratedSHA: active},
	}}
	out, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ps.Namespace).UpdateStatus(context.Background(), ps, metav1.UpdateOptions{})
	require.NoError(t, err)
	return out
}

// waitImported waits until cond holds for the imported CommitStatuses of ns, and returns them.
func waitImported(t *testing.T, ns, what string, cond func([]commitstatusv1alpha1.CommitStatus) bool) []commitstatusv1alpha1.CommitStatus {
	t.Helper()
	var last []commitstatusv1alpha1.CommitStatus
	err := testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).List(ctx, metav1.ListOptions{LabelSelector: commitstatusv1alpha1.ImportedLabel + "=true"})
		if err != nil {
			return false, err
		}
		last = list.Items
		return cond(last), nil
	})
	require.NoError(t, err, "%s; imported: %+v", what, last)
	return last
}

// GitHub check runs on the commits a strategy tracks become imported CommitStatuses, follow the
// SCM, and go when the strategy moves on; a status this cluster mirrors is not imported again.
func TestCheckRunsOfTrackedCommitsAreImported(t *testing.T) {
	testenv.SkipIfShort(t)
	installAllCRDs(t)
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	ns := githubSetup(t, srv, nil)
	ps := strategyTracking(t, ns, sha1, sha2)
	srv.AddCheckRun("acme", "app", scmtest.GitHubCheckRun{HeadSHA: sha1, Name: "ci/lint", Status: "completed", Conclusion: "failure",
		DetailsURL: "https://ci.example.com/runs/1", Output: scmtest.GitHubCheckRunOutput{Title: "3 manifests fail kubeconform"}})
	createCommitStatus(t, newCommitStatus(ns, "health", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess))
	startController(t, controllerOptions{setup: func(c *setup.Config) { c.ImportPollInterval = time.Second }})

	got := waitImported(t, ns, "the failing check run is imported", func(l []commitstatusv1alpha1.CommitStatus) bool {
		return len(l) == 1 && l[0].Spec.Phase == commitstatusv1alpha1.CommitStatusFailure
	})[0]
	assert.Equal(t, "ci-lint", got.Labels[commitstatusv1alpha1.KeyLabel], "the key promotions name")
	assert.Equal(t, "check-run", got.Annotations[commitstatusv1alpha1.SourceAnnotation])
	assert.Equal(t, commitstatusv1alpha1.CommitStatusSpec{
		RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"}, SHA: sha1, Name: "ci/lint",
		Description: "3 manifests fail kubeconform", Phase: commitstatusv1alpha1.CommitStatusFailure, URL: "https://ci.example.com/runs/1",
	}, got.Spec)
	require.True(t, metav1.IsControlledBy(&got, ps) || got.OwnerReferences[0].UID == ps.UID, "owned by the strategy")
	waitFor(t, ns, "health", synced(commitstatusv1alpha1.CommitStatusSuccess))
	assert.Len(t, srv.Statuses("acme", "app", sha1), 1, "the import sent nothing to GitHub: only this cluster's own status is there")

	// The re-run passes: the next poll follows it.
	srv.AddCheckRun("acme", "app", scmtest.GitHubCheckRun{HeadSHA: sha1, Name: "ci/lint", Status: "completed", Conclusion: "success"})
	waitImported(t, ns, "the passing re-run replaces the verdict, and this cluster's own status is not imported back",
		func(l []commitstatusv1alpha1.CommitStatus) bool {
			return len(l) == 1 && l[0].Spec.Phase == commitstatusv1alpha1.CommitStatusSuccess && l[0].Name == got.Name
		})

	// The strategy moves on to another proposed commit: the import of the old one goes.
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Get(context.Background(), "app", metav1.GetOptions{})
	require.NoError(t, err)
	setTracked(t, ps, importSHA3, sha2)
	waitImported(t, ns, "nothing left of a commit no longer tracked", func(l []commitstatusv1alpha1.CommitStatus) bool { return len(l) == 0 })
}

// A status this cluster mirrors while the import reads the SCM is not imported as someone
// else's: the import reads what the cluster holds after what the SCM holds, so whatever it
// finds mirrored is already there to recognise.
func TestAStatusMirroredDuringTheReadIsNotImported(t *testing.T) {
	testenv.SkipIfShort(t)
	installAllCRDs(t)
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	ns := githubSetup(t, srv, nil)
	srv.AddCheckRun("acme", "app", scmtest.GitHubCheckRun{HeadSHA: sha1, Name: "ci/lint", Status: "completed", Conclusion: "success"})
	var once sync.Once
	srv.BeforeStatusRead = func(sha string) {
		if sha != sha1 {
			return
		}
		once.Do(func() {
			createCommitStatus(t, newCommitStatus(ns, "health", "app", sha1, commitstatusv1alpha1.CommitStatusPending))
			assert.NoError(t, testenv.Wait(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
				return len(srv.Statuses("acme", "app", sha1)) == 1, nil
			}), "the health status is mirrored while the import waits on its read")
		})
	}
	strategyTracking(t, ns, sha1, sha2)
	startController(t, controllerOptions{setup: func(c *setup.Config) { c.ImportPollInterval = time.Hour }})

	imported := waitImported(t, ns, "the check run is imported, in the same pass as the read", func(l []commitstatusv1alpha1.CommitStatus) bool {
		for _, cs := range l {
			if cs.Spec.Name == "ci/lint" {
				return true
			}
		}
		return false
	})
	for _, cs := range imported {
		assert.NotEqual(t, "sluice/health", cs.Spec.Name, "this cluster's own health status was imported back as %s", cs.Name)
	}
}
