package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
)

// envPullRequest is a PullRequest app-<env> of <env>-next into env on the repository gitea-app.
func envPullRequest(env string, state promoterv1alpha1.PullRequestState) *promoterv1alpha1.PullRequest {
	return &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "app-" + env},
		Spec: promoterv1alpha1.PullRequestSpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "gitea-app"}, Title: "Promote to " + env,
			SourceBranch: env + "-next", TargetBranch: env, State: state},
	}
}

// A create on Gitea whose reply was lost (the process stopped, the request timed out) left a pull
// request open that the PullRequest does not know. The create that follows is refused, and the
// open one is recorded: never a second pull request.
func TestACreateWhoseReplyWasLostOnGiteaIsAdopted(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	srv, cloneURL, repo, d0 := giteaRepo(t, map[string][]byte{"values.yaml": []byte("v: 0\n")})
	hydrateTo(t, repo, "", "dev", d0, "v: 0\n")
	head := hydrateTo(t, repo, "dev", "dev-next", d0, "v: 1\n")
	var opened struct {
		Number int64 `json:"number"`
	}
	require.NoError(t, srv.API(ctx, "POST", "/repos/"+srv.AdminUser+"/app/pulls",
		map[string]string{"head": "dev-next", "base": "dev", "title": "Promote to dev"}, &opened))

	giteaRepository(t, f, srv, cloneURL)
	prs := env.Sluice.PromoterV1alpha1().PullRequests(f.ns)
	_, err := prs.Create(ctx, envPullRequest("dev", promoterv1alpha1.PullRequestOpen), metav1.CreateOptions{})
	require.NoError(t, err)
	startPromoter(t, env.Config, t.TempDir())

	open := testenv.WaitForObject(t, time.Minute, prs, "app-dev", func(p *promoterv1alpha1.PullRequest) bool {
		return p.Status.ID != ""
	})
	assert.Equal(t, fmt.Sprint(opened.Number), open.Status.ID, "the pull request the lost create opened")
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, open.Status.State)
	assert.Equal(t, head, open.Status.HeadSHA)
	pulls, err := giteaPulls(ctx, srv)
	require.NoError(t, err)
	assert.Len(t, pulls, 1, "no second pull request")
}

// giteaCounted is a promoter on one Gitea repository whose API calls are counted, with dev
// opened and settled (so its start's reads are behind it), and staging-next one commit ahead of
// staging.
type giteaCounted struct {
	ctx          context.Context
	prs          promoterclient.PullRequestInterface
	proxy        *countingProxy
	settled      func(name string)
	stagingHead  string
	beforeCounts scmCalls
}

func newGiteaCounted(t *testing.T) *giteaCounted {
	f := newFixture(t)
	srv, cloneURL, repo, d0 := giteaRepo(t, map[string][]byte{"values.yaml": []byte("v: 0\n")})
	hydrateTo(t, repo, "", "dev", d0, "v: 0\n")
	hydrateTo(t, repo, "dev", "dev-next", d0, "v: 1\n")
	hydrateTo(t, repo, "", "staging", d0, "v: 0\n")
	g := &giteaCounted{ctx: f.ctx, prs: env.Sluice.PromoterV1alpha1().PullRequests(f.ns), proxy: newCountingProxy(t, srv.URL),
		stagingHead: hydrateTo(t, repo, "staging", "staging-next", d0, "staging v: 1\n")}
	giteaRepositoryAt(t, f, srv, g.proxy.URL, cloneURL)
	_, err := g.prs.Create(g.ctx, envPullRequest("dev", promoterv1alpha1.PullRequestOpen), metav1.CreateOptions{})
	require.NoError(t, err)
	m, _ := startPromoterManager(t, env.Config, setup.Config{CacheDir: t.TempDir()}, nil)
	testenv.WaitForObject(t, time.Minute, g.prs, "app-dev", func(p *promoterv1alpha1.PullRequest) bool {
		return p.Status.State == promoterv1alpha1.PullRequestOpen
	})
	g.settled = func(name string) {
		require.NoError(t, testenv.Wait(g.ctx, 30*time.Second, func(context.Context) (bool, error) {
			return observed(m).idle("pullrequest", f.ns+"/"+name), nil
		}))
	}
	g.settled("app-dev")
	g.beforeCounts = g.proxy.snapshot()["app"]
	return g
}

// since is what Gitea was asked for the repository since the fixture settled.
func (g *giteaCounted) since() scmCalls { return g.proxy.snapshot()["app"].minus(g.beforeCounts) }

// mergedStaging waits until app-staging is merged and its reconciles settle, checks that Gitea
// was asked for one create, no find and at least one merge since the fixture settled, and returns
// those calls.
func (g *giteaCounted) mergedStaging(t *testing.T) scmCalls {
	merged := testenv.WaitForObject(t, 2*time.Minute, g.prs, "app-staging", func(p *promoterv1alpha1.PullRequest) bool {
		return p.Status.State == promoterv1alpha1.PullRequestMerged
	})
	assert.Equal(t, g.stagingHead, merged.Status.MergedHeadSHA)
	assert.NotEmpty(t, merged.Status.MergeSHA, "the merge commit, from the read Gitea's merge needs")
	g.settled("app-staging")
	calls := g.since()
	t.Logf("Gitea was asked: %+v", calls)
	assert.Zero(t, calls.Find, "nothing looked up")
	assert.EqualValues(t, 1, calls.Create)
	require.GreaterOrEqual(t, calls.Merge, int64(1))
	return calls
}

// A pull request opened and merged on Gitea costs, counted as Gitea sees it, one create, and per
// merge attempt (Gitea refuses one while it checks mergeability) a read before it and the read
// Gitea's merge needs to learn its merge commit. Nothing is looked up before the create, and the
// status written after the create is not read back from Gitea. The pull request counted is the
// second the process opens: the first takes the reads of the process's start.
func TestAPromotionOnGiteaCostsOneCreateAndOneReadPerMerge(t *testing.T) {
	g := newGiteaCounted(t)
	_, err := g.prs.Create(g.ctx, envPullRequest("staging", promoterv1alpha1.PullRequestOpen), metav1.CreateOptions{})
	require.NoError(t, err)
	open := testenv.WaitForObject(t, time.Minute, g.prs, "app-staging", func(p *promoterv1alpha1.PullRequest) bool {
		return p.Status.State == promoterv1alpha1.PullRequestOpen
	})
	assert.Equal(t, g.stagingHead, open.Status.HeadSHA, "recorded from the create's reply")
	g.settled("app-staging")
	assert.Equal(t, scmCalls{Create: 1}, g.since(), "opened with one call, and the write of its status read nothing back")

	open.Spec.State, open.Spec.ExpectedHeadSHA = promoterv1alpha1.PullRequestMerged, g.stagingHead
	_, err = g.prs.Update(g.ctx, open, metav1.UpdateOptions{})
	require.NoError(t, err)
	calls := g.mergedStaging(t)
	assert.LessOrEqual(t, calls.Get, 2*calls.Merge, "a read before each merge attempt, and the one Gitea's merge needs to learn its merge commit; none more")
}

// A pull request asked to merge from the start (a strategy's, with no gate in the way) is merged
// in the reconcile that opens it, once its number is recorded: on what the create answered, with
// no read of the pull request before the first merge. Counted as Gitea sees it: one create, and
// one read per merge attempt less one, where a read before each merge cost one more.
func TestAPullRequestAskedToMergeOnGiteaIsMergedWithoutARereadOfItsCreate(t *testing.T) {
	g := newGiteaCounted(t)
	pr := envPullRequest("staging", promoterv1alpha1.PullRequestMerged)
	pr.Spec.ExpectedHeadSHA = g.stagingHead
	_, err := g.prs.Create(g.ctx, pr, metav1.CreateOptions{})
	require.NoError(t, err)
	calls := g.mergedStaging(t)
	assert.LessOrEqual(t, calls.Get, 2*calls.Merge-1, "no read between the create and the first merge")
}
