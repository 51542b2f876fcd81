package revertcommit

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// rig is a Reconciler on a fake clientset, with caches the test fills as informers would. It has
// no repository opener: these tests stop before git.
type rig struct {
	t       *testing.T
	client  *fake.Clientset
	reverts cache.Indexer
	prs     cache.Indexer
	events  *record.FakeRecorder
	r       *Reconciler
}

func newRig(t *testing.T, rc *rollbackv1alpha1.RevertCommit) *rig {
	t.Helper()
	g := &rig{t: t, events: record.NewFakeRecorder(10)}
	g.client = fake.NewSimpleClientset(rc) //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
	reconciletest.OptimisticConcurrency(g.client, rollbackv1alpha1.SchemeGroupVersion.WithResource("revertcommits"))
	g.reverts = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, g.reverts.Add(rc))
	g.prs = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	g.r = &Reconciler{
		Client: g.client, RevertCommits: rollbacklisters.NewRevertCommitLister(g.reverts),
		Strategies:   promoterlisters.NewPromotionStrategyLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		PullRequests: promoterlisters.NewPullRequestLister(g.prs),
		Recorder:     g.events, Metrics: metrics.New(prometheus.NewRegistry()), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval: time.Minute, StalledRecheck: time.Minute, HistoryLimit: DefaultHistoryLimit,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)),
	}
	return g
}

func revert(mutate func(*rollbackv1alpha1.RevertCommit)) *rollbackv1alpha1.RevertCommit {
	rc := &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-prod", Generation: 1},
		Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"},
			ActiveBranch: "prod", Reason: "INC-42"},
	}
	if mutate != nil {
		mutate(rc)
	}
	return rc
}

func (g *rig) reconcile() (time.Duration, error) {
	g.t.Helper()
	res, err := g.r.Reconcile(context.Background(), "team/web-prod")
	return res.RequeueAfter, err
}

// sync makes the cache hold what the fake API holds, as the informer would.
func (g *rig) sync() *rollbackv1alpha1.RevertCommit {
	g.t.Helper()
	return reconciletest.Sync(g.t, g.reverts, g.client.RollbackV1alpha1().RevertCommits("team").Get, "web-prod")
}

// A revert whose strategy does not exist stalls with what to do, written once: the next
// reconcile, which finds the same, writes nothing.
func TestRevertStallsOnceOnAMissingStrategy(t *testing.T) {
	g := newRig(t, revert(nil))
	requeue, err := g.reconcile()
	require.NoError(t, err)
	assert.Zero(t, requeue, "the strategy's creation brings it back")
	rc := g.sync()
	assert.Equal(t, rollbackv1alpha1.RevertPending, rc.Status.Phase)
	assert.Equal(t, int64(1), rc.Status.ObservedGeneration)
	stalled := conditions.Get(rc.Status.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	assert.Equal(t, "PromotionStrategyNotFound", stalled.Reason)
	assert.Contains(t, stalled.Message, "create it, or fix spec.promotionStrategyRef")

	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client), "an unchanged status is not written again")
}

func TestSuspendedRevertIsSkippedWithItsReason(t *testing.T) {
	g := newRig(t, revert(func(rc *rollbackv1alpha1.RevertCommit) { rc.Spec.Suspend = true }))
	_, err := g.reconcile()
	require.NoError(t, err)
	rc := g.sync()
	s := conditions.Get(rc.Status.Conditions, conditions.Suspended)
	require.NotNil(t, s)
	assert.Equal(t, suspend.ReasonSpec, s.Reason)
	assert.Nil(t, conditions.Get(rc.Status.Conditions, conditions.Stalled), "not looked at further: no strategy lookup")
	assert.Empty(t, rc.Status.RevertSHA)

	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client))
}

func TestMissingOrFinishedRevertIsANoOp(t *testing.T) {
	g := newRig(t, revert(func(rc *rollbackv1alpha1.RevertCommit) { rc.Status.Phase = rollbackv1alpha1.RevertMerged }))
	g.client.ClearActions()
	_, err := g.reconcile()
	require.NoError(t, err)
	assert.Empty(t, g.client.Actions(), "a merged revert is done")

	require.NoError(t, g.reverts.Delete(revert(nil)))
	res, err := g.r.Reconcile(context.Background(), "team/web-prod")
	require.NoError(t, err)
	assert.Zero(t, res)
	assert.Empty(t, g.client.Actions())
	assert.Empty(t, g.events.Events)
}

// Without the peer CRDs the revert stalls, naming what to install, and looks again later.
func TestRevertWithoutPeerCRDsSaysWhatToInstall(t *testing.T) {
	g := newRig(t, revert(nil))
	g.r.PeerCRDs = func() (bool, string) {
		return false, "the PromotionStrategy, PullRequest CRDs are not installed: install the promoter-controller chart"
	}
	requeue, err := g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, time.Minute, requeue)
	stalled := conditions.Get(g.sync().Status.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	assert.Equal(t, ReasonPromoterCRDsMissing, stalled.Reason)
	assert.Contains(t, stalled.Message, "a revert is carried by a promoter.sluice.dev PullRequest")
	assert.Contains(t, stalled.Message, "install the promoter-controller chart")
}

// What a pass announces follows a write this pass made: not a status the live object already
// holds (an earlier pass wrote and announced it), and not one decided from a stale copy.
func TestRevertAnnouncesOnlyAfterItsOwnWrite(t *testing.T) {
	g := newRig(t, revert(nil))
	stale := g.sync()
	announced := 0
	pass := func(phase rollbackv1alpha1.RevertPhase) *pass {
		p := &pass{rc: stale.DeepCopy()}
		p.rc.Status.Phase = phase
		p.announce(func() { announced++ })
		return p
	}

	require.NoError(t, g.r.write(context.Background(), stale, pass(rollbackv1alpha1.RevertOpen)))
	assert.Equal(t, 1, announced)

	require.NoError(t, g.r.write(context.Background(), stale, pass(rollbackv1alpha1.RevertOpen)),
		"the live object already holds this status")
	assert.Equal(t, 1, announced, "announced once")

	err := g.r.write(context.Background(), stale, pass(rollbackv1alpha1.RevertFailed))
	assert.True(t, apierrors.IsConflict(err), "a status decided from a stale copy does not land: %v", err)
	assert.Equal(t, 1, announced)
	assert.Equal(t, rollbackv1alpha1.RevertOpen, g.sync().Status.Phase)
}

// A revert that ended without merging closes its pull request if one still asks to merge (a
// second replica with an older view can open it after the first ended the revert); a merged
// revert's pull request, and one it does not control, are left alone.
func TestAnEndedRevertClosesAPullRequestLeftAskingToMerge(t *testing.T) {
	for _, tc := range []struct {
		name       string
		phase      rollbackv1alpha1.RevertPhase
		controlled bool
		wantState  promoterv1alpha1.PullRequestState
	}{
		{"superseded", rollbackv1alpha1.RevertSuperseded, true, promoterv1alpha1.PullRequestClosed},
		{"failed", rollbackv1alpha1.RevertFailed, true, promoterv1alpha1.PullRequestClosed},
		{"merged", rollbackv1alpha1.RevertMerged, true, promoterv1alpha1.PullRequestMerged},
		{"another's", rollbackv1alpha1.RevertSuperseded, false, promoterv1alpha1.PullRequestMerged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := revert(func(rc *rollbackv1alpha1.RevertCommit) {
				rc.UID = "uid-1"
				rc.Status.Phase = tc.phase
				conditions.MarkReady(&rc.Status.Conditions, 1, "AlreadyRestored", "prod was put back")
			})
			g := newRig(t, rc)
			pr := &promoterv1alpha1.PullRequest{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: PullRequestName("app", "prod")},
				Spec:       promoterv1alpha1.PullRequestSpec{State: promoterv1alpha1.PullRequestMerged},
				Status:     promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestOpen},
			}
			owner := rc
			if !tc.controlled {
				owner = revert(func(o *rollbackv1alpha1.RevertCommit) { o.Name, o.UID = "other", "uid-2" })
			}
			pr.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, rollbackv1alpha1.SchemeGroupVersion.WithKind("RevertCommit"))}
			_, err := g.client.PromoterV1alpha1().PullRequests("team").Create(context.Background(), pr, metav1.CreateOptions{})
			require.NoError(t, err)
			require.NoError(t, g.prs.Add(pr))

			_, err = g.reconcile()
			require.NoError(t, err)
			got, err := g.client.PromoterV1alpha1().PullRequests("team").Get(context.Background(), pr.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.wantState, got.Spec.State)
			if tc.wantState == promoterv1alpha1.PullRequestClosed {
				assert.Equal(t, "AlreadyRestored: prod was put back", got.Annotations[EndedAnnotation])
			}
		})
	}
}

// A pass that wrote the revert again on a moved tip and asked its pull request for it, then died
// before its status write, leaves the status naming the older commit. When that pull request has
// merged by the next pass, that pass records the commit that merged and the base it was written
// on, announcing the re-plan the dead pass never announced, and the pass after it the merge.
func TestAMergeIsRecordedWithTheCommitAnEarlierPassDidNotLiveToRecord(t *testing.T) {
	g := newRig(t, revert(nil))
	o := seen(withPR(promoterv1alpha1.PullRequestMerged, promoterv1alpha1.PullRequestMerged))
	o.rc.Status.TargetHydratedSHA = tipBad
	o.pr.Spec.ExpectedHeadSHA, o.pr.Spec.ExpectedBaseSHA = revert2, tipMoved
	o.pr.Status.MergedHeadSHA, o.pr.Status.MergeSHA = revert2, revert2
	o.adopted = &ownCommit{sha: revert2, parent: tipMoved, shas: shas{bad: dryBad, target: dryGood}}
	o.tip, o.inTip = revert2, true
	p := &pass{rc: o.rc.DeepCopy()}

	pl := decide(o)
	require.Equal(t, stepAdopt, pl.step, "the commit found in git is recorded first")
	_, err := g.r.apply(context.Background(), p, o, pl, nil)
	require.NoError(t, err)
	// The next pass reads afresh: the status now records the adopted commit.
	o.rc = p.rc.DeepCopy()
	pl = decide(o)
	require.Equal(t, stepMerged, pl.step)
	_, err = g.r.apply(context.Background(), p, o, pl, nil)
	require.NoError(t, err)

	st := p.rc.Status
	assert.Equal(t, rollbackv1alpha1.RevertMerged, st.Phase)
	assert.Equal(t, revert2, st.RevertSHA, "the commit that merged")
	assert.Equal(t, tipMoved, st.BaseSHA, "the tip it was written on")
	assert.Equal(t, revert2, st.MergeSHA)
	for _, f := range p.events {
		f()
	}
	close(g.events.Events)
	var reasons []string
	for e := range g.events.Events {
		reasons = append(reasons, e)
	}
	require.Len(t, reasons, 2, "%q", reasons)
	assert.Contains(t, reasons[0], EventRollbackReplanned)
	assert.Contains(t, reasons[1], EventRollbackMerged)
}

// A pass that began before another replica moved the revert on (recorded it merged, say) opens no
// pull request for it: once the next revert has reclaimed the environment's name, that pull
// request would merge the old revert again.
func TestAPassOpensNoPullRequestForARevertThatMovedOnMeanwhile(t *testing.T) {
	for _, movedOn := range []bool{false, true} {
		g := newRig(t, revert(nil))
		live, err := g.client.RollbackV1alpha1().RevertCommits("team").Get(context.Background(), "web-prod", metav1.GetOptions{})
		require.NoError(t, err)
		o := seen(written)
		o.rc.ResourceVersion = live.ResourceVersion
		if movedOn {
			live.Status.Phase = rollbackv1alpha1.RevertMerged
			_, err = g.client.RollbackV1alpha1().RevertCommits("team").UpdateStatus(context.Background(), live, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
		require.Equal(t, stepOpen, decide(o).step, "the premise: the pass would open the pull request")

		_, err = g.r.apply(context.Background(), &pass{rc: o.rc.DeepCopy()}, o, decide(o), nil)
		prs, listErr := g.client.PromoterV1alpha1().PullRequests("team").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, listErr)
		if movedOn {
			assert.ErrorIs(t, err, errMovedOn)
			assert.Empty(t, prs.Items, "no pull request for a revert another replica moved on")
		} else {
			require.NoError(t, err)
			assert.Len(t, prs.Items, 1, "opened while the revert is what the pass read")
		}
	}
}
