package promotionstrategy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

type keys []string

func (k *keys) Enqueue(key string) { *k = append(*k, key) }

// One event, one fetch: reconciles that follow the promoter's own writes read the cache; a
// first reconcile, a webhook (Waking), a refresh annotation, the fallback poll and a merge made
// on the SCM each fetch once.
func TestReconcileFetchesOncePerEvent(t *testing.T) {
	g := newRig(t, "dev")
	clock := clocktesting.NewFakePassiveClock(now)
	g.r.Clock, g.r.Fetches = clock, &Fetches{}
	fetches := func() float64 { return counter(t, g.reg, "sluice_promoter_git_operations_total") }
	g.create(&promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 1},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}}},
	})
	step := func(what string, want float64) *promoterv1alpha1.PromotionStrategy {
		t.Helper()
		require.NoError(t, g.reconcile(), what)
		assert.Equal(t, want, fetches(), what)
		return g.sync()
	}
	step("the first reconcile fetches", 1)
	step("a reconcile after its own status write reads the cache", 1)

	d1 := g.repo.CommitFiles(t, "main", map[string]string{"values.yaml": "v: 1\n"}, "change")
	proposed := g.hydrate(d1, "dev")
	step("a push nobody announced waits for an announcement or the poll", 1)
	_, err := g.client.PromoterV1alpha1().PullRequests("team").Get(context.Background(), "app-dev", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no proposal seen without a fetch: %v", err)

	var queue keys
	g.r.Fetches.Waking(&queue).Enqueue("team/app")
	assert.Equal(t, keys{"team/app"}, queue, "Waking still enqueues")
	step("a webhook's wake-up fetches", 2)
	pr := g.pullRequest()
	assert.Equal(t, proposed, pr.Spec.ExpectedHeadSHA)
	step("the wake-up is used once", 2)

	// Merged on the SCM: the cache has not seen it, the PullRequest says so.
	g.repo.SetBranch(t, "dev", proposed)
	pr.Status = promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged, MergedHeadSHA: proposed, MergeSHA: proposed}
	g.mergedBySCM(pr)
	ps := step("a merge the cache does not hold fetches", 3)
	assert.Equal(t, d1, ps.Status.Environments[0].Active.DrySHA)
	step("and once it holds it, no more", 3)

	metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, "r1")
	_, err = g.client.PromoterV1alpha1().PromotionStrategies("team").Update(context.Background(), ps, metav1.UpdateOptions{})
	require.NoError(t, err)
	g.sync()
	ps = step("a new refresh annotation fetches", 4)
	assert.Equal(t, "r1", ps.Status.LastHandledRefresh)
	step("a handled one does not", 4)

	clock.SetTime(now.Add(DefaultInterval - 1))
	step("before the poll interval, no fetch", 4)
	clock.SetTime(now.Add(DefaultInterval))
	step("the fallback poll fetches", 5)
}

// Without Fetches, every reconcile fetches, as before.
func TestNilFetchesFetchEveryReconcile(t *testing.T) {
	var f *Fetches
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"}}
	assert.True(t, f.due(ps, "u", now))
	f.done(ps, "u", now)
	assert.True(t, f.due(ps, "u", now))
}

// A new URL or generation needs a fetch; a deleted strategy is forgotten.
func TestFetchesFollowTheSpecAndTheURL(t *testing.T) {
	f := &Fetches{}
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 1}}
	f.done(ps, "u", now)
	assert.False(t, f.due(ps, "u", now))
	assert.True(t, f.due(ps, "other", now), "another URL")
	ps.Generation = 2
	assert.True(t, f.due(ps, "u", now), "a changed spec")
	f.done(ps, "u", now)
	f.Forget("team/app")
	assert.True(t, f.due(ps, "u", now), "forgotten")
}

// A refresh is fetched for once, even when the reconcile that fetched could not record it as
// handled (its status write conflicted) and the next one retries.
func TestARefreshIsFetchedForOnce(t *testing.T) {
	f := &Fetches{}
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 1}}
	f.done(ps, "u", now)
	metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, "r1")
	require.True(t, f.due(ps, "u", now), "a new refresh")
	f.done(ps, "u", now)
	assert.False(t, f.due(ps, "u", now), "the retry after a conflict, r1 still unhandled in status")
	metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, "r2")
	assert.True(t, f.due(ps, "u", now), "the next refresh")
}
