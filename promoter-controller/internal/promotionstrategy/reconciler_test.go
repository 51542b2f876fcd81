package promotionstrategy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"k8s.io/utils/ptr"

	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	_ "github.com/sluicehq/sluice/pkg/scm/plaingit" // the "git" provider
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
)

// rig is a Reconciler on fake clients, over a real git repository served by the test.
type rig struct {
	t        *testing.T
	r        *Reconciler
	client   *fake.Clientset
	events   *record.FakeRecorder
	reg      *prometheus.Registry
	repo     *gittest.Repo
	holds    fakeHolds
	indexers map[string]cache.Indexer
}

type fakeHolds map[string][]promotion.Hold

func (h fakeHolds) For(_, _, branch string) ([]promotion.Hold, error) { return h[branch], nil }

func newIndexer() cache.Indexer {
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

func newRig(t *testing.T, envs ...string) *rig {
	t.Helper()
	srv := gittest.NewServer(t)
	g := &rig{t: t, client: fake.NewSimpleClientset(), events: record.NewFakeRecorder(100), reg: prometheus.NewRegistry(),
		repo: srv.CreateRepo(t, "app"), holds: fakeHolds{}, indexers: map[string]cache.Indexer{}}
	for _, kind := range []string{"strategies", "proposed", "pulls", "statuses", "gates", "repos", "providers"} {
		g.indexers[kind] = newIndexer()
	}
	require.NoError(t, g.indexers["providers"].Add(&scmv1alpha1.ScmProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "git"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit}}))
	require.NoError(t, g.indexers["repos"].Add(&scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: srv.URL("app"), AllowInsecureLoopbackHTTP: true, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: "app"}}))
	cacheDir, log := t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil))
	gitCache, err := git.NewCache(cacheDir, log)
	require.NoError(t, err)
	reconciletest.OptimisticConcurrency(g.client, promoterv1alpha1.SchemeGroupVersion.WithResource("promotionstrategies"))
	g.r = &Reconciler{
		Client: g.client, Strategies: promoterlisters.NewPromotionStrategyLister(g.indexers["strategies"]),
		ProposedCommits: promoterlisters.NewProposedCommitLister(g.indexers["proposed"]),
		PullRequests:    promoterlisters.NewPullRequestLister(g.indexers["pulls"]),
		CommitStatuses:  commitstatuslisters.NewCommitStatusLister(g.indexers["statuses"]),
		Gates:           gatinglisters.NewGateLister(g.indexers["gates"]), Holds: g.holds,
		Repositories: &repository.Resolver{Kube: kubefake.NewClientset(), Repos: scmlisters.NewScmRepositoryLister(g.indexers["repos"]),
			Providers: scmlisters.NewScmProviderLister(g.indexers["providers"]), Cache: gitCache},
		Recorder: g.events, Metrics: metrics.New(g.reg), Log: log, Clock: clocktesting.NewFakePassiveClock(now),
	}
	d0 := g.repo.CommitFiles(t, "main", map[string]string{"values.yaml": "v: 0\n"}, "initial")
	for _, e := range envs {
		g.repo.CommitFiles(t, e, map[string]string{"hydrator.metadata": fmt.Sprintf(`{"drySha":%q}`, d0)}, "initial "+e)
	}
	return g
}

// create stores ps in the fake API and the cache.
func (g *rig) create(ps *promoterv1alpha1.PromotionStrategy) *promoterv1alpha1.PromotionStrategy {
	ps.ResourceVersion = "1"
	_, err := g.client.PromoterV1alpha1().PromotionStrategies(ps.Namespace).Create(context.Background(), ps, metav1.CreateOptions{})
	require.NoError(g.t, err)
	require.NoError(g.t, g.indexers["strategies"].Add(ps))
	return ps
}

// sync makes the cache hold what the fake API holds, as an informer would.
func (g *rig) sync() *promoterv1alpha1.PromotionStrategy {
	ps, err := g.client.PromoterV1alpha1().PromotionStrategies("team").Get(context.Background(), "app", metav1.GetOptions{})
	require.NoError(g.t, err)
	require.NoError(g.t, g.indexers["strategies"].Update(ps))
	list, err := g.client.PromoterV1alpha1().ProposedCommits("team").List(context.Background(), metav1.ListOptions{})
	require.NoError(g.t, err)
	for i := range list.Items {
		require.NoError(g.t, g.indexers["proposed"].Update(&list.Items[i]))
	}
	pulls, err := g.client.PromoterV1alpha1().PullRequests("team").List(context.Background(), metav1.ListOptions{})
	require.NoError(g.t, err)
	require.NoError(g.t, g.indexers["pulls"].Replace(toObjects(pulls.Items), ""))
	return ps
}

// hydrate puts a proposed commit for dry on <env>-next, on top of env.
func (g *rig) hydrate(dry, env string) string {
	g.repo.SetBranch(g.t, env+"-next", g.repo.Branch(g.t, env))
	sha := g.repo.CommitFiles(g.t, env+"-next", map[string]string{"manifest.yaml": "dry: " + dry + "\n"}, "hydrate "+dry[:7])
	g.repo.AddNote(g.t, "refs/notes/hydrator.metadata", sha, fmt.Sprintf(`{"drySha":%q}`, dry))
	return sha
}

func (g *rig) reconcile() error {
	_, err := g.r.Reconcile(context.Background(), "team/app")
	return err
}

// drainEvents are the reasons of the Events recorded so far.
func (g *rig) drainEvents() []string {
	var out []string
	for _, e := range reconciletest.Events(g.events) {
		out = append(out, strings.SplitN(e, " ", 3)[1])
	}
	return out
}

func (g *rig) pullRequest() *promoterv1alpha1.PullRequest {
	pr, err := g.client.PromoterV1alpha1().PullRequests("team").Get(context.Background(), "app-dev", metav1.GetOptions{})
	require.NoError(g.t, err)
	return pr
}

// mergedBySCM writes pr's status as the PullRequest reconciler does, and puts it in the cache as
// its informer would.
func (g *rig) mergedBySCM(pr *promoterv1alpha1.PullRequest) {
	pr, err := g.client.PromoterV1alpha1().PullRequests("team").UpdateStatus(context.Background(), pr, metav1.UpdateOptions{})
	require.NoError(g.t, err)
	require.NoError(g.t, g.indexers["pulls"].Update(pr))
}

// A promotion runs create, merge (played here), record; a reconcile from the copy the cache held
// before the record was written conflicts and announces nothing.
func TestReconcilePromotesAndAnnouncesOnce(t *testing.T) {
	g := newRig(t, "dev")
	g.create(&promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 1},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}}},
	})
	d1 := g.repo.CommitFiles(t, "main", map[string]string{"values.yaml": "v: 1\n"}, "change")
	proposed := g.hydrate(d1, "dev")

	require.NoError(t, g.reconcile())
	pr := g.pullRequest()
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Spec.State)
	assert.Equal(t, proposed, pr.Spec.ExpectedHeadSHA)
	assert.Equal(t, []string{EventPromotionStarted}, g.drainEvents())
	ps := g.sync()
	assert.True(t, conditions.IsTrue(ps.Status.Conditions, conditions.Reconciling))
	assert.Equal(t, ReasonPromoting, conditions.Get(ps.Status.Conditions, conditions.Ready).Reason)
	pc, err := g.client.PromoterV1alpha1().ProposedCommits("team").Get(context.Background(), "app-dev", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, d1, pc.Status.Proposed.DrySHA)

	// The PullRequest reconciler's part: merged (a fast-forward).
	g.repo.SetBranch(t, "dev", proposed)
	pr.Status = promoterv1alpha1.PullRequestStatus{State: promoterv1alpha1.PullRequestMerged, MergedHeadSHA: proposed, MergeSHA: proposed}
	g.mergedBySCM(pr)

	require.NoError(t, g.reconcile())
	assert.Equal(t, []string{EventPromotionCompleted}, g.drainEvents())
	stale := ps
	ps = g.sync()
	require.Len(t, ps.Status.Environments[0].History, 1)
	assert.Equal(t, d1, ps.Status.Environments[0].History[0].DrySHA)
	assert.Equal(t, ReasonPromoted, conditions.Get(ps.Status.Conditions, conditions.Ready).Reason)
	assert.Equal(t, 1.0, counter(t, g.reg, "sluice_promoter_promotions_total"))

	require.NoError(t, g.indexers["strategies"].Update(stale))
	err = g.reconcile()
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, g.drainEvents(), "a reconcile from a stale copy announces nothing")
	assert.Equal(t, 1.0, counter(t, g.reg, "sluice_promoter_promotions_total"), "nor counts anything")
}

// counter sums the counters named name.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// A strategy needs the CommitStatus and Gate CRDs only when it names commit statuses or gates.
func TestKindsReadFollowTheSpec(t *testing.T) {
	spec := promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "dev"}}}
	assert.Equal(t, crds.SCM, kindsRead(spec))
	spec.Environments = append(spec.Environments, promoterv1alpha1.Environment{Branch: "prod",
		Gates:                  &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "freeze"}}},
		ProposedCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "health"}}})
	assert.Equal(t, []schema.GroupResource{crds.ScmRepositories, crds.ScmProviders, crds.CommitStatuses, crds.Gates}, kindsRead(spec))
	spec.Environments = spec.Environments[:1]
	spec.ActiveCommitStatuses = []promoterv1alpha1.CommitStatusSelector{{Key: "health"}}
	assert.Equal(t, []schema.GroupResource{crds.ScmRepositories, crds.ScmProviders, crds.CommitStatuses}, kindsRead(spec))
}

func toObjects(prs []promoterv1alpha1.PullRequest) []any {
	out := make([]any, len(prs))
	for i := range prs {
		out[i] = &prs[i]
	}
	return out
}

// pullRequestCalls are the verbs the reconciler sent for PullRequests since the last call.
func (g *rig) pullRequestCalls() []string {
	var out []string
	for _, a := range g.client.Actions() {
		if a.GetResource().Resource == "pullrequests" {
			out = append(out, a.GetVerb())
		}
	}
	g.client.ClearActions()
	return out
}

// A PullRequest is read from the cache; only the cache's "not found" is read again live, so a
// PullRequest the cache has not seen yet is never created twice.
func TestAPullRequestIsReadLiveOnlyWhenTheCacheHasNone(t *testing.T) {
	g := newRig(t, "dev")
	g.create(&promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app", Generation: 1},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev", AutoMerge: ptr.To(false)}}},
	})
	g.hydrate(g.repo.CommitFiles(t, "main", map[string]string{"values.yaml": "v: 1\n"}, "change"), "dev")
	g.client.ClearActions()

	require.NoError(t, g.reconcile())
	assert.Equal(t, []string{"get", "create"}, g.pullRequestCalls(), "none in the cache: read live, then created")

	ps, err := g.client.PromoterV1alpha1().PromotionStrategies("team").Get(context.Background(), "app", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, g.indexers["strategies"].Update(ps), "the strategy's own status write is in the cache, its PullRequest is not")
	require.NoError(t, g.reconcile())
	assert.Equal(t, []string{"get"}, g.pullRequestCalls(), "the cache has not seen the create: read live, not created again")
	assert.Len(t, mustList(t, g), 1, "one PullRequest")

	g.sync()
	g.client.ClearActions()
	require.NoError(t, g.reconcile())
	assert.Empty(t, g.pullRequestCalls(), "the cache holds it: no call")
}

func mustList(t *testing.T, g *rig) []promoterv1alpha1.PullRequest {
	list, err := g.client.PromoterV1alpha1().PullRequests("team").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return list.Items
}
