package rollbackpolicy

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// rig is a Reconciler on a fake clientset, with caches the test fills as informers would.
type rig struct {
	t                                     *testing.T
	client                                *fake.Clientset
	policies, strategies, statuses, revts cache.Indexer
	clock                                 *clocktesting.FakePassiveClock
	events                                *record.FakeRecorder
	metrics                               *metrics.Rollbacks
	r                                     *Reconciler
}

func newRig(t *testing.T, policy *rollbackv1alpha1.RollbackPolicy) *rig {
	t.Helper()
	g := &rig{t: t, clock: clocktesting.NewFakePassiveClock(t0.Add(5 * time.Minute)), events: record.NewFakeRecorder(10),
		metrics: metrics.New(prometheus.NewRegistry())}
	g.client = fake.NewSimpleClientset(policy) //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
	reconciletest.OptimisticConcurrency(g.client, rollbackv1alpha1.SchemeGroupVersion.WithResource("rollbackpolicies"))
	index := func() cache.Indexer { return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}) }
	g.policies, g.strategies, g.statuses, g.revts = index(), index(), index(), index()
	require.NoError(t, g.policies.Add(policy))
	g.r = &Reconciler{
		Client: g.client, Policies: rollbacklisters.NewRollbackPolicyLister(g.policies),
		Strategies:     promoterlisters.NewPromotionStrategyLister(g.strategies),
		CommitStatuses: commitstatuslisters.NewCommitStatusLister(g.statuses),
		RevertCommits:  rollbacklisters.NewRevertCommitLister(g.revts),
		Recorder:       g.events, Metrics: g.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		StalledRecheck: time.Minute, Clock: g.clock,
	}
	return g
}

// policy selects prod of strategy app, and rolls back when its health check fails for a minute.
func policy(mutate func(*rollbackv1alpha1.RollbackPolicy)) *rollbackv1alpha1.RollbackPolicy {
	p := &rollbackv1alpha1.RollbackPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 1},
		Spec: rollbackv1alpha1.RollbackPolicySpec{
			PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"},
			Trigger: rollbackv1alpha1.RollbackTriggerSpec{CommitStatuses: []rollbackv1alpha1.CommitStatusKey{{Key: "health"}},
				FailureThreshold: &metav1.Duration{Duration: time.Minute}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// prodFailing puts the strategy, prod running bad since t0, and a failing health check in the caches.
func (g *rig) prodFailing() {
	env := prodOn(bad, t0)
	require.NoError(g.t, g.strategies.Add(&promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "repo"},
			Environments: []promoterv1alpha1.Environment{{Branch: "prod"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{env}},
	}))
	require.NoError(g.t, g.statuses.Add(&commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "health-prod", Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "health"}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "repo"},
			SHA: env.Active.HydratedSHA, Name: "health", Description: "web: 0/3 ready", Phase: commitstatusv1alpha1.CommitStatusFailure},
	}))
}

func (g *rig) reconcile() (time.Duration, error) {
	g.t.Helper()
	res, err := g.r.Reconcile(context.Background(), "team/web")
	return res.RequeueAfter, err
}

// syncPolicy makes the cache hold what the fake API holds, as the informer would.
func (g *rig) syncPolicy() *rollbackv1alpha1.RollbackPolicy {
	g.t.Helper()
	return reconciletest.Sync(g.t, g.policies, g.client.RollbackV1alpha1().RollbackPolicies("team").Get, "web")
}

func (g *rig) syncReverts() {
	g.t.Helper()
	list, err := g.client.RollbackV1alpha1().RevertCommits("team").List(context.Background(), metav1.ListOptions{})
	require.NoError(g.t, err)
	for i := range list.Items {
		require.NoError(g.t, g.revts.Add(&list.Items[i]))
	}
}

func (g *rig) count(verb, resource string) int {
	n := 0
	for _, a := range g.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func (g *rig) fired() float64 {
	return testutil.ToFloat64(g.metrics.PolicyTriggers.WithLabelValues("team", "app", "prod", DecisionFired))
}

// The policy times the failure, fires once the threshold passed, and announces it once: a
// reconcile that changes nothing writes nothing, and one that starts from a stale cache neither
// overwrites the live status nor repeats the Event and the metric.
func TestPolicyFiresOnceAndRewritesNothing(t *testing.T) {
	g := newRig(t, policy(nil))
	g.prodFailing()

	requeue, err := g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, time.Minute, requeue, "woken when the threshold ends")
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client))
	p := g.syncPolicy()
	require.Len(t, p.Status.Environments, 1)
	assert.Contains(t, p.Status.Environments[0].Message, "rolls back at")
	assert.Equal(t, int64(1), p.Status.ObservedGeneration)

	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client), "an unchanged status is not written again")

	g.clock.SetTime(t0.Add(6 * time.Minute))
	stale := p.DeepCopy()
	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, g.count("create", "revertcommits"))
	assert.Equal(t, 2, reconciletest.StatusUpdates(g.client))
	events := reconciletest.Events(g.events)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning RevertCommitCreated prod: created RevertCommit "+RevertCommitName("web", "prod", bad))
	assert.Equal(t, 1.0, g.fired())

	// The cache still holds the status from before the fire, the RevertCommits cache has not seen
	// the create: the pass finds the RevertCommit made, and the live status already says so.
	require.NoError(t, g.policies.Update(stale))
	_, err = g.reconcile()
	require.NoError(t, err)
	reverts, err := g.client.RollbackV1alpha1().RevertCommits("team").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, reverts.Items, 1, "the create found the first RevertCommit")
	assert.Empty(t, reconciletest.Events(g.events), "announced once")
	assert.Equal(t, 1.0, g.fired(), "counted once")

	// With the RevertCommit seen and the policy still stale, the pass decides "already
	// reverted" from old state: the conflict comes back instead of landing on the live status.
	g.syncReverts()
	_, err = g.reconcile()
	assert.True(t, apierrors.IsConflict(err), "a status decided from a stale copy is not written: %v", err)
	live := g.syncPolicy()
	assert.Contains(t, live.Status.Environments[0].Message, "rolling back", "the live status is left alone")
	require.NotNil(t, live.Status.Environments[0].LastRollback)

	writes := reconciletest.StatusUpdates(g.client)
	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Contains(t, g.syncPolicy().Status.Environments[0].Message, "already reverted by RevertCommit")
	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, writes+1, reconciletest.StatusUpdates(g.client), "once up to date, nothing more is written")
	assert.Empty(t, reconciletest.Events(g.events))
	assert.Equal(t, 1.0, g.fired())
}

func TestSuspendedPolicyIsSkippedWithItsReason(t *testing.T) {
	g := newRig(t, policy(func(p *rollbackv1alpha1.RollbackPolicy) {
		p.Annotations = map[string]string{suspend.Annotation: "change freeze"}
	}))
	g.prodFailing()
	g.clock.SetTime(t0.Add(time.Hour))

	_, err := g.reconcile()
	require.NoError(t, err)
	p := g.syncPolicy()
	s := conditions.Get(p.Status.Conditions, conditions.Suspended)
	require.NotNil(t, s)
	assert.Equal(t, suspend.ReasonAnnotation, s.Reason)
	assert.Equal(t, "change freeze", s.Message)
	assert.Empty(t, p.Status.Environments, "nothing is evaluated")
	assert.Zero(t, g.count("create", "revertcommits"))

	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client), "written once")
	assert.Empty(t, reconciletest.Events(g.events))
}

func TestMissingPolicyIsANoOp(t *testing.T) {
	g := newRig(t, policy(nil))
	require.NoError(t, g.policies.Delete(policy(nil)))
	g.client.ClearActions()
	res, err := g.r.Reconcile(context.Background(), "team/web")
	require.NoError(t, err)
	assert.Zero(t, res)
	assert.Empty(t, g.client.Actions())
	assert.Empty(t, reconciletest.Events(g.events))
}

// Without the peer CRDs the policy stalls with what to install, and looks again later.
func TestPolicyWithoutPeerCRDsSaysWhatToInstall(t *testing.T) {
	g := newRig(t, policy(nil))
	g.r.PeerCRDs = func() (bool, string) {
		return false, "the CommitStatus CRDs are not installed: install the commitstatus-controller chart"
	}
	requeue, err := g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, time.Minute, requeue)
	stalled := conditions.Get(g.syncPolicy().Status.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	assert.Equal(t, ReasonPeerCRDsMissing, stalled.Reason)
	assert.Contains(t, stalled.Message, "install the commitstatus-controller chart")
	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client))
	reverts, _ := g.r.RevertCommits.List(labels.Everything())
	assert.Empty(t, reverts)
}
