package pullrequest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	_ "github.com/sluicehq/sluice/pkg/scm/plaingit" // the "git" provider
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
)

// rig is a Reconciler on fake clients, over a real git repository served by the test, with dev
// and dev-next one commit apart.
type rig struct {
	t        *testing.T
	r        *Reconciler
	client   *fake.Clientset
	prs      cache.Indexer
	repo     *gittest.Repo
	proposed string
	reg      *prometheus.Registry
}

func newRig(t *testing.T) *rig {
	t.Helper()
	srv := gittest.NewServer(t)
	namespaced := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	g := &rig{t: t, client: fake.NewSimpleClientset(), prs: cache.NewIndexer(cache.MetaNamespaceKeyFunc, namespaced), repo: srv.CreateRepo(t, "app"),
		reg: prometheus.NewRegistry()}
	repos, providers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, namespaced), cache.NewIndexer(cache.MetaNamespaceKeyFunc, namespaced)
	require.NoError(t, providers.Add(&scmv1alpha1.ScmProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "git"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit}}))
	require.NoError(t, repos.Add(&scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: srv.URL("app"), AllowInsecureLoopbackHTTP: true, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: "app"}}))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gitCache, err := git.NewCache(t.TempDir(), log)
	require.NoError(t, err)
	g.r = &Reconciler{
		Client: g.client, PullRequests: promoterlisters.NewPullRequestLister(g.prs),
		Repositories: &repository.Resolver{Kube: kubefake.NewClientset(), Repos: scmlisters.NewScmRepositoryLister(repos),
			Providers: scmlisters.NewScmProviderLister(providers), Cache: gitCache},
		Recorder: record.NewFakeRecorder(10), Metrics: metrics.New(g.reg), Log: log, Clock: clocktesting.NewFakePassiveClock(now),
	}
	base := g.repo.CommitFiles(t, "dev", map[string]string{"manifest.yaml": "v: 0\n"}, "initial")
	g.repo.SetBranch(t, "dev-next", base)
	g.proposed = g.repo.CommitFiles(t, "dev-next", map[string]string{"manifest.yaml": "v: 1\n"}, "change")
	return g
}

// put stores pr in the fake API and the cache.
func (g *rig) put(pr *promoterv1alpha1.PullRequest) {
	_, err := g.client.PromoterV1alpha1().PullRequests("team").Create(context.Background(), pr, metav1.CreateOptions{})
	require.NoError(g.t, err)
	require.NoError(g.t, g.prs.Add(pr))
}

// sync makes the cache hold what the fake API holds and returns it.
func (g *rig) sync() *promoterv1alpha1.PullRequest {
	pr, err := g.client.PromoterV1alpha1().PullRequests("team").Get(context.Background(), "app-dev", metav1.GetOptions{})
	require.NoError(g.t, err)
	require.NoError(g.t, g.prs.Update(pr))
	return pr
}

func (g *rig) reconcile() {
	_, err := g.r.Reconcile(context.Background(), "team/app-dev")
	require.NoError(g.t, err)
}

func gitPullRequest(state promoterv1alpha1.PullRequestState, head string) *promoterv1alpha1.PullRequest {
	return &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app-dev", Generation: 1},
		Spec: promoterv1alpha1.PullRequestSpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, Title: "Promote",
			SourceBranch: "dev-next", TargetBranch: "dev", ExpectedHeadSHA: head, State: state},
	}
}

func TestReconcileMergesOnPlainGit(t *testing.T) {
	g := newRig(t)
	g.put(gitPullRequest(promoterv1alpha1.PullRequestMerged, g.proposed))
	g.reconcile()
	pr := g.sync()
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Status.State)
	assert.False(t, pr.Status.MergedExternally)
	assert.Equal(t, g.proposed, pr.Status.MergedHeadSHA)
	assert.Equal(t, g.proposed, g.repo.Branch(t, "dev"), "a fast-forward")
	assert.Equal(t, ReasonMerged, conditions.Get(pr.Status.Conditions, conditions.Ready).Reason)
}

// A pull request merged by hand is recorded as external, and its spec.state follows.
func TestReconcileMergedByAPersonAlignsTheSpec(t *testing.T) {
	g := newRig(t)
	g.put(gitPullRequest(promoterv1alpha1.PullRequestOpen, g.proposed))
	g.reconcile()
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, g.sync().Status.State)

	g.repo.SetBranch(t, "dev", g.proposed)
	g.reconcile()
	pr := g.sync()
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Status.State)
	assert.True(t, pr.Status.MergedExternally)
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, pr.Spec.State, "the spec follows on the next reconcile, once the status is written")

	g.reconcile()
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, g.sync().Spec.State)
}

// Sluice never merges a head it did not check.
func TestReconcileRefusesAMovedHead(t *testing.T) {
	g := newRig(t)
	checked := g.proposed
	g.repo.CommitFiles(t, "dev-next", map[string]string{"manifest.yaml": "v: 2\n"}, "pushed after the check")
	g.put(gitPullRequest(promoterv1alpha1.PullRequestMerged, checked))
	g.reconcile()
	pr := g.sync()
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, pr.Status.State)
	assert.Equal(t, ReasonHeadMoved, conditions.Get(pr.Status.Conditions, conditions.Ready).Reason)
	assert.NotEqual(t, checked, g.repo.Branch(t, "dev"))
}

// A suspended PullRequest is left alone and says why.
func TestReconcileSkipsASuspendedPullRequest(t *testing.T) {
	g := newRig(t)
	pr := gitPullRequest(promoterv1alpha1.PullRequestMerged, g.proposed)
	pr.Annotations = map[string]string{"reconcile.fluxcd.io/suspended": "release freeze"}
	g.put(pr)
	g.reconcile()
	got := g.sync()
	assert.Empty(t, got.Status.State)
	assert.Equal(t, "release freeze", conditions.Get(got.Status.Conditions, conditions.Suspended).Message)
	assert.NotEqual(t, g.proposed, g.repo.Branch(t, "dev"))
}

func (g *rig) drainEvents() []string {
	return reconciletest.Events(g.r.Recorder.(*record.FakeRecorder))
}

// A stall is announced after the write that records it, once: a reconcile from a copy the cache
// held before that write finds the live object already stalled, writes nothing, and says nothing.
func TestReconcileAnnouncesAStallOnlyWhenItWritesIt(t *testing.T) {
	g := newRig(t)
	reconciletest.OptimisticConcurrency(g.client, promoterv1alpha1.SchemeGroupVersion.WithResource("pullrequests"))
	pr := gitPullRequest(promoterv1alpha1.PullRequestOpen, g.proposed)
	pr.Spec.RepositoryRef.Name = "missing"
	pr.ResourceVersion = "1"
	g.put(pr)
	stale := g.sync()
	g.reconcile()
	stalled := g.sync()
	require.True(t, conditions.IsTrue(stalled.Status.Conditions, conditions.Stalled))
	events := g.drainEvents()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonInvalidConfiguration)

	require.NoError(t, g.prs.Update(stale))
	_, err := g.r.Reconcile(context.Background(), "team/app-dev")
	assert.True(t, apierrors.IsConflict(err), "a stall decided from a stale copy does not land: %v", err)
	assert.Empty(t, g.drainEvents(), "nor is it announced")
	g.sync()
	g.reconcile()
	assert.Empty(t, g.drainEvents(), "the live object already says so: nothing is written, nothing is announced")
	assert.Equal(t, stalled.ResourceVersion, g.sync().ResourceVersion)
}

// gitOps counts the git operations of kind op the reconciler made.
func (g *rig) gitOps(op string) float64 {
	g.t.Helper()
	families, err := g.reg.Gather()
	require.NoError(g.t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != "sluice_promoter_git_operations_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == op {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// prime fetches dev and dev-next into the shared cache, as the strategy does before it asks for
// a merge.
func (g *rig) prime() {
	g.t.Helper()
	repo, err := g.r.Repositories.Resolve(context.Background(), "team", "app")
	require.NoError(g.t, err)
	require.NoError(g.t, repo.Git.Fetch(context.Background(), "dev", "dev-next"))
}

// The strategy fetched a moment ago: the merge is pushed without fetching again.
func TestMergeOfAFreshlyFetchedHeadDoesNotFetchAgain(t *testing.T) {
	g := newRig(t)
	g.prime()
	g.put(gitPullRequest(promoterv1alpha1.PullRequestMerged, g.proposed))
	g.reconcile()
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, g.sync().Status.State)
	assert.Equal(t, g.proposed, g.repo.Branch(t, "dev"))
	assert.Zero(t, g.gitOps("fetch"), "the cache held the head to merge")
	assert.Equal(t, 1.0, g.gitOps("merge"))
}

// A merge guarded by its base (a revert's) whose base the cache has not seen yet: the target is
// fetched, and the merge lands on the base it was planned on instead of being refused as moved.
func TestGuardedMergeFetchesABaseTheCacheHasNotSeen(t *testing.T) {
	g := newRig(t)
	g.prime()
	base := g.repo.CommitFiles(t, "dev", map[string]string{"hotfix.yaml": "x: 1\n"}, "landed after the cache was read")
	pr := gitPullRequest(promoterv1alpha1.PullRequestMerged, g.proposed)
	pr.Spec.ExpectedBaseSHA = base
	g.put(pr)
	g.reconcile()
	got := g.sync()
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, got.Status.State, "%+v", got.Status.Conditions)
	dev := g.repo.Branch(t, "dev")
	assert.True(t, g.repo.IsAncestor(t, base, dev), "merged onto the expected base")
	assert.True(t, g.repo.IsAncestor(t, g.proposed, dev), "the head lands")
}

// The target moved on the server after the cache was read: the compare-and-swap push fails, the
// merge fetches and keeps both commits.
func TestMergeFromAStaleCacheKeepsWhatTheTargetGained(t *testing.T) {
	g := newRig(t)
	g.prime()
	hotfix := g.repo.CommitFiles(t, "dev", map[string]string{"hotfix.yaml": "x: 1\n"}, "hotfix")
	g.put(gitPullRequest(promoterv1alpha1.PullRequestMerged, g.proposed))
	g.reconcile()
	pr := g.sync()
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Status.State)
	dev := g.repo.Branch(t, "dev")
	assert.True(t, g.repo.IsAncestor(t, hotfix, dev), "the hotfix stays")
	assert.True(t, g.repo.IsAncestor(t, g.proposed, dev), "the promotion lands")
}

// An open pull request of a strategy reads the cache its strategy fetches; one of anything else
// (a revert's) fetches for itself. Both see a merge made outside Sluice once the cache holds it.
func TestAnOpenPullRequestOfAStrategyReadsTheCache(t *testing.T) {
	for _, tc := range []struct {
		name    string
		owner   *metav1.OwnerReference
		fetches float64
	}{
		{"strategy's", &metav1.OwnerReference{APIVersion: promoterv1alpha1.SchemeGroupVersion.String(), Kind: "PromotionStrategy",
			Name: "app", UID: "u1", Controller: ptr.To(true)}, 0},
		{"revert's", &metav1.OwnerReference{APIVersion: "rollback.sluice.dev/v1alpha1", Kind: "RevertCommit",
			Name: "app", UID: "u2", Controller: ptr.To(true)}, 1},
		{"no owner", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			g.prime()
			pr := gitPullRequest(promoterv1alpha1.PullRequestOpen, g.proposed)
			if tc.owner != nil {
				pr.OwnerReferences = []metav1.OwnerReference{*tc.owner}
			}
			g.put(pr)
			g.reconcile()
			assert.Equal(t, promoterv1alpha1.PullRequestOpen, g.sync().Status.State)
			assert.Equal(t, tc.fetches, g.gitOps("fetch"))

			// A person merges; the strategy's next fetch (here, prime) brings it into the cache.
			g.repo.SetBranch(t, "dev", g.proposed)
			g.prime()
			g.reconcile()
			got := g.sync()
			assert.Equal(t, promoterv1alpha1.PullRequestMerged, got.Status.State)
			assert.True(t, got.Status.MergedExternally)
		})
	}
}

// A reconcile from a copy the cache held before the merge was asked (spec.state still open) must
// not put its "open" status over the live "merged" one: the next reconcile, from the live object,
// would merge the same pull request again onto a target put back on its base since.
func TestAStatusFromAStaleCopyNeverUndoesAMerge(t *testing.T) {
	g := newRig(t)
	reconciletest.OptimisticConcurrency(g.client, promoterv1alpha1.SchemeGroupVersion.WithResource("pullrequests"))
	ctx := context.Background()
	base := g.repo.Branch(t, "dev")
	pr := gitPullRequest(promoterv1alpha1.PullRequestOpen, g.proposed)
	pr.Spec.ExpectedBaseSHA = base
	pr.ResourceVersion = "1"
	g.put(pr)
	stale := g.sync()
	asked := stale.DeepCopy()
	asked.Spec.State = promoterv1alpha1.PullRequestMerged
	_, err := g.client.PromoterV1alpha1().PullRequests("team").Update(ctx, asked, metav1.UpdateOptions{})
	require.NoError(t, err)
	g.sync()
	g.reconcile()
	require.Equal(t, promoterv1alpha1.PullRequestMerged, g.sync().Status.State)
	require.Equal(t, g.proposed, g.repo.Branch(t, "dev"))

	g.repo.SetBranch(t, "dev", base)
	require.NoError(t, g.prs.Update(stale))
	_, err = g.r.Reconcile(ctx, "team/app-dev")
	assert.True(t, apierrors.IsConflict(err), "a status decided from a stale copy does not land: %v", err)
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, g.sync().Status.State, "the merge stays recorded")
	g.reconcile()
	assert.Equal(t, base, g.repo.Branch(t, "dev"), "merged once, not again onto the base")
}
