package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// published is one CommitStatus spec the controller wrote, as a watch saw it.
type published struct {
	SHA   string
	Phase commitstatusv1alpha1.CommitStatusPhase
}

// recordCommitStatuses keeps every phase and commit the CommitStatus name is written with, from
// now until the test ends.
func recordCommitStatuses(t *testing.T, ns, name string) func() []published {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []published
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			cs, ok := ev.Object.(*commitstatusv1alpha1.CommitStatus)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			mu.Lock()
			if n := len(seen); n == 0 || seen[n-1] != (published{cs.Spec.SHA, cs.Spec.Phase}) {
				seen = append(seen, published{cs.Spec.SHA, cs.Spec.Phase})
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return func() []published {
		mu.Lock()
		defer mu.Unlock()
		return append([]published(nil), seen...)
	}
}

// holdGate makes the Deployment Flux health-checks InProgress, so kustomize-controller applies a
// revision's objects and then waits, with status.lastAttemptedRevision on the new revision and
// status.lastAppliedRevision still on the previous one.
func holdGate(t *testing.T, ns string) {
	t.Helper()
	updateDeploymentStatus(t, ns, "gate", func(d *appsv1.Deployment) {
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 0, 0
		d.Status.Conditions = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", Message: "ReplicaSet is progressing."},
		}
	})
}

// waitAttempted waits until kustomize-controller has applied revision's objects and is waiting
// for its health checks: the window in which the objects and lastAppliedRevision disagree.
func waitAttempted(t *testing.T, ns, revision string) {
	t.Helper()
	flux.WaitForStatus(t, env, flux.Kustomizations, ns, "apps", func(status map[string]any) bool {
		attempted, _ := status["lastAttemptedRevision"].(string)
		applied, _ := status["lastAppliedRevision"].(string)
		return attempted == revision && applied != revision && healthChecking(status)
	}, "revision %s applied and health-checking", revision)
}

// healthChecking says whether kustomize-controller reports it is running the health checks,
// which it does only once the revision's objects are applied.
func healthChecking(status map[string]any) bool {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Healthy" && m["status"] == "Unknown" {
			return true
		}
	}
	return false
}

// A verdict is credited only to the revision Flux says it applied and finished applying. Real
// kustomize-controller, told to wait for a gate Deployment, applies a bad commit and then a
// revert, and each time holds lastAppliedRevision on the previous commit while the new objects
// are already live. The CommitStatus never calls the bad commit healthy (the revert's objects
// are healthy) nor the good ones failed (the bad commit's objects are failed): it is pending for
// the commit being applied, then carries the verdict of the commit Flux reports applied.
func TestVerdictIsCreditedOnlyToTheRevisionFluxFinishedApplying(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	createDeployment(t, ns, "gate", nil)
	rolledOut(t, ns, "gate")
	repo, url := gittest.NewGitServedRepo(t, "app")
	good := repo.CommitFiles(t, "main", realFluxManifests("healthy"), "2.0.0")
	flux.Start(t, env, flux.Options{Namespace: ns})
	flux.CreateGitRepository(t, env, ns, "app", flux.GitRepositorySpec{URL: url, Branch: "main", Interval: 2 * time.Second})
	// A long interval: kustomize-controller applies each new commit as source-controller fetches
	// it, and is not caught waiting on the held gate in a periodic apply of the old one.
	ks := flux.CreateKustomization(t, env, ns, "apps", flux.KustomizationSpec{GitRepository: "app", TargetNamespace: ns, Interval: time.Hour})
	gate := fmt.Sprintf(`{"spec":{"timeout":"5m","healthChecks":[{"apiVersion":"apps/v1","kind":"Deployment","name":"gate","namespace":%q}]}}`, ns)
	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Patch(context.Background(), ks.GetName(), types.MergePatchType, []byte(gate), metav1.PatchOptions{})
	require.NoError(t, err)
	flux.WaitForApplied(t, env, ns, "apps", flux.Revision("main", good))
	seen := recordCommitStatuses(t, ns, "web")
	createHC(t, ns, webOfTheAppsKustomization)
	waitCommitStatus(t, ns, "web", phaseFor(good, commitstatusv1alpha1.CommitStatusSuccess))

	holdGate(t, ns)
	bad := repo.CommitFiles(t, "main", realFluxManifests("broken"), "2.1.0")
	waitAttempted(t, ns, flux.Revision("main", bad))
	waitHC(t, ns, "web", hasResource("ConfigMap", "flags", healthv1alpha1.StatusFailed))
	rolledOut(t, ns, "gate")
	flux.WaitForApplied(t, env, ns, "apps", flux.Revision("main", bad))
	waitCommitStatus(t, ns, "web", phaseFor(bad, commitstatusv1alpha1.CommitStatusFailure))

	holdGate(t, ns)
	revert := repo.CommitFiles(t, "main", realFluxManifests("healthy"), "Revert 2.1.0")
	waitAttempted(t, ns, flux.Revision("main", revert))
	waitHC(t, ns, "web", hasResource("ConfigMap", "flags", healthv1alpha1.StatusCurrent))
	rolledOut(t, ns, "gate")
	flux.WaitForApplied(t, env, ns, "apps", flux.Revision("main", revert))
	waitCommitStatus(t, ns, "web", phaseFor(revert, commitstatusv1alpha1.CommitStatusSuccess))

	history := seen()
	t.Logf("published: %v", history)
	for _, p := range history {
		assert.False(t, p.SHA == bad && p.Phase == commitstatusv1alpha1.CommitStatusSuccess, "the bad commit was published healthy: %v", history)
		assert.False(t, p.SHA != bad && p.Phase == commitstatusv1alpha1.CommitStatusFailure, "a good commit was published failed: %v", history)
	}
	for _, want := range []published{
		{bad, commitstatusv1alpha1.CommitStatusPending}, {bad, commitstatusv1alpha1.CommitStatusFailure},
		{revert, commitstatusv1alpha1.CommitStatusPending}, {revert, commitstatusv1alpha1.CommitStatusSuccess},
	} {
		assert.Contains(t, history, want, "published: %v", history)
	}
}
