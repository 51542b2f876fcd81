package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestARevertStartedFromThePageIsMerged: with the real promoter-controller and
// rollback-controller running on a real git repository, prod runs a failing commit; Revert…
// on the pipeline page, confirmed, makes a RevertCommit whose PullRequest the promoter merges,
// prod's branch gets back the healthy commit's manifests, and the open page follows it all.
func TestARevertStartedFromThePageIsMerged(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	g := newGitPipeline(t, "prod")
	runController(t, "promoter-controller", g.ns, "--git-cache-dir", t.TempDir())
	runController(t, "rollback-controller", g.ns, "--git-cache-dir", t.TempDir(), "--manifest-git-cache-dir", t.TempDir(),
		"--revert-poll-interval", "1s")

	healthyDry := g.dryCommit("web 1")
	healthy := g.promote(healthyDry, "web:1", commitstatusv1alpha1.CommitStatusSuccess)
	healthyTree := g.repo.ReadCommit(t, healthy.Active.HydratedSHA).TreeHash.String()
	badDry := g.dryCommit("web 2")
	bad := g.promote(badDry, "web:2", commitstatusv1alpha1.CommitStatusFailure)
	require.NotEqual(t, healthyTree, g.repo.ReadCommit(t, bad.Active.HydratedSHA).TreeHash.String())

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/pipelines/"+g.ns+"/app"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(css(`[data-branch="prod"][data-active="`+badDry+`"]`)),
		follow(`a[href^="/act/revert/"]`), chromedp.WaitVisible(css(`#f-sha`)),
		chromedp.SetValue(css(`#f-sha`), healthyDry), chromedp.SendKeys(css(`#f-reason`), "web 2 fails its health check"),
		chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)),
		chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))

	reverts, err := env.Sluice.RollbackV1alpha1().RevertCommits(g.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, reverts.Items, 1, "one RevertCommit, from the page")
	name := reverts.Items[0].Name
	// The open page shows the revert merge, without a reload.
	read(b, t, chromedp.Evaluate[bool](`window.sluiceNotReloaded = true`))
	rc := testenv.WaitForObject(t, 90*time.Second, env.Sluice.RollbackV1alpha1().RevertCommits(g.ns), name,
		func(rc *rollbackv1alpha1.RevertCommit) bool { return rc.Status.Phase == rollbackv1alpha1.RevertMerged })
	assert.Equal(t, badDry, rc.Status.BadDrySHA)
	assert.Equal(t, healthyDry, rc.Status.TargetDrySHA)
	require.NotNil(t, rc.Status.PullRequest)
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(g.ns).Get(context.Background(), rc.Status.PullRequest.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Status.State, "the promoter merged the revert's pull request")
	assert.Equal(t, "prod", pr.Spec.TargetBranch)

	// git: prod's tip is the revert commit, with the healthy commit's whole tree.
	tip := g.repo.Branch(t, "prod")
	assert.Equal(t, rc.Status.RevertSHA, tip)
	assert.Equal(t, healthyTree, g.repo.ReadCommit(t, tip).TreeHash.String(), "prod is back on web 1's manifests")

	within(b, t, chromedp.WaitVisible(css(`[data-branch="prod"] .reverts [data-phase="Merged"]`)))
	g.refresh("after the revert")
	within(b, t, chromedp.WaitVisible(css(`[data-branch="prod"][data-active="`+healthyDry+`"]`)))
	notReloaded := read(b, t, chromedp.Evaluate[bool](`window.sluiceNotReloaded === true`))
	assert.True(t, notReloaded, "the page followed the revert in place")
	screenshot(b, t, "revert-merged")

	within(b, t, chromedp.Navigate(url+"/pipelines/"+g.ns+"/app/history"), chromedp.WaitVisible(css(`#history`)))
	cell := read(b, t, chromedp.Text(css(`#commit-`+badDry+` td[data-branch="prod"]`)))
	assert.Contains(t, cell, "reverted "+name+" Merged", "the history marks the bad commit reverted")
}

// gitPipeline is a namespace with a real git repository served over HTTP by the test, a plain
// git ScmProvider and ScmRepository, and PromotionStrategy "app" over it, with a health check
// on each environment's active commit.
type gitPipeline struct {
	t    *testing.T
	ns   string
	repo *gittest.Repo
	env  string
}

func newGitPipeline(t *testing.T, branch string) *gitPipeline {
	t.Helper()
	ctx := context.Background()
	g := &gitPipeline{t: t, ns: newNamespace(t), env: branch}
	srv := gittest.NewServer(t)
	g.repo = srv.CreateRepo(t, "app")
	_, err := env.Sluice.ScmV1alpha1().ScmProviders(g.ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"}, Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(g.ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: srv.URL("app"), AllowInsecureLoopbackHTTP: true,
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: "app"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The environment runs a first dry commit, as a hydrator left it.
	first := g.dryCommit("initial")
	g.repo.CommitFiles(t, branch, map[string]string{"hydrator.metadata": hydratorNote(first), "manifest.yaml": "image: web:0\n"}, "initial")
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(g.ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			ActiveCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "health"}},
			Environments:         []promoterv1alpha1.Environment{{Branch: branch}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return g
}

func hydratorNote(dry string) string { return fmt.Sprintf(`{"drySha":%q}`, dry) }

func (g *gitPipeline) dryCommit(msg string) string {
	return g.repo.CommitFiles(g.t, "main", map[string]string{"values.yaml": "msg: " + msg + "\n"}, msg)
}

// promote renders dry onto the environment's proposed branch as a hydrator does, waits for the
// promoter to merge it, writes its health as the health-controller would, and waits for the
// promoter to see it.
func (g *gitPipeline) promote(dry, image string, health commitstatusv1alpha1.CommitStatusPhase) promoterv1alpha1.EnvironmentStatus {
	g.t.Helper()
	next := g.env + "-next"
	g.repo.SetBranch(g.t, next, g.repo.Branch(g.t, g.env))
	sha := g.repo.CommitFiles(g.t, next, map[string]string{"hydrator.metadata": hydratorNote(dry), "manifest.yaml": "image: " + image + "\n"}, "hydrate "+dry[:7])
	g.repo.AddNote(g.t, "refs/notes/hydrator.metadata", sha, hydratorNote(dry))
	g.refresh("hydrated " + dry)
	st := g.waitEnv("promoted "+dry[:7], func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Active.DrySHA == dry && len(e.History) > 0 && e.History[0].DrySHA == dry
	})
	g.setHealth(st.Active.HydratedSHA, health)
	if health == commitstatusv1alpha1.CommitStatusSuccess {
		return g.waitEnv("healthy on "+dry[:7], func(e promoterv1alpha1.EnvironmentStatus) bool {
			return len(e.LastHealthyDrySHAs) > 0 && e.LastHealthyDrySHAs[0].SHA == dry
		})
	}
	return g.waitEnv("failing on "+dry[:7], func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.Phase == health })
}

func (g *gitPipeline) setHealth(sha string, phase commitstatusv1alpha1.CommitStatusPhase) {
	g.t.Helper()
	_, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(g.ns).Create(context.Background(), &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: "health-" + sha[:10], Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "health"}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"},
			SHA: sha, Name: "health", Phase: phase, Description: "health: " + string(phase)},
	}, metav1.CreateOptions{})
	require.NoError(g.t, err)
}

// refresh asks the promoter to fetch and re-evaluate now, as a hydrator's CI would, and waits
// until it did.
func (g *gitPipeline) refresh(why string) {
	g.t.Helper()
	value := fmt.Sprintf("%s %d", why, time.Now().UnixNano())
	strategies := env.Sluice.PromoterV1alpha1().PromotionStrategies(g.ns)
	_, err := testenv.Update(context.Background(), strategies, "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, value)
	})
	require.NoError(g.t, err)
	testenv.WaitForObject(g.t, 60*time.Second, strategies, "app",
		func(ps *promoterv1alpha1.PromotionStrategy) bool { return ps.Status.LastHandledRefresh == value })
}

// waitEnv waits until cond holds for the environment's status and returns it.
func (g *gitPipeline) waitEnv(what string, cond func(promoterv1alpha1.EnvironmentStatus) bool) promoterv1alpha1.EnvironmentStatus {
	g.t.Helper()
	var last promoterv1alpha1.EnvironmentStatus
	testenv.WaitForObject(g.t, 90*time.Second, env.Sluice.PromoterV1alpha1().PromotionStrategies(g.ns), "app",
		func(ps *promoterv1alpha1.PromotionStrategy) bool {
			for _, e := range ps.Status.Environments {
				if e.Branch == g.env {
					last = e
					return cond(e)
				}
			}
			return false
		})
	return last
}
