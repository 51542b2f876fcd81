package integration

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// onGitea is prod of strategy "app" on a real Gitea, promoted by the promoter-controller binary
// through pull requests on Gitea, with a RollbackPolicy and the rollback-controller in-process.
type onGitea struct {
	tb   testing.TB
	ctx  context.Context
	ns   string
	srv  *giteatest.Server
	repo *git.Repository
	rb   *rollbackController
	// checks are the policy's requiredCommitStatuses: keys its reverts must pass before merging,
	// which failAndWaitRestored reports passed as soon as the revert commit is written, as a CI
	// would.
	checks []rollbackv1alpha1.CommitStatusKey
}

func newOnGitea(tb testing.TB, cooldown time.Duration, checks ...string) *onGitea {
	tb.Helper()
	testenv.SkipIfShort(tb)
	g := &onGitea{tb: tb, ctx: context.Background(), ns: fmt.Sprintf("rbg-%d", time.Now().UnixNano())}
	for _, k := range checks {
		g.checks = append(g.checks, rollbackv1alpha1.CommitStatusKey{Key: k})
	}
	_, err := env.Kube.CoreV1().Namespaces().Create(g.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.ns}}, metav1.CreateOptions{})
	require.NoError(tb, err)
	g.srv = giteatest.StartForTest(tb)
	cloneURL, err := g.srv.CreateRepo(g.ctx, "app")
	require.NoError(tb, err)
	cache, err := git.NewCache(tb.TempDir(), nil)
	require.NoError(tb, err)
	g.repo, err = cache.Open(cloneURL, git.Auth{Username: g.srv.AdminUser, Password: g.srv.Token}, git.Options{})
	require.NoError(tb, err)
	d0 := g.dry("initial")
	g.commit("prod", d0, "image: web:0\n")
	g.createObjects(cloneURL, cooldown)
	startPromoter(tb, g.ns)
	g.rb = startRollback(tb, env.Config, g.ns, time.Second)
	return g
}

func (g *onGitea) createObjects(cloneURL string, cooldown time.Duration) {
	tb, ctx, ns := g.tb, g.ctx, g.ns
	_, err := env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{scmv1alpha1.SecretKeyToken: []byte(g.srv.Token),
			scmv1alpha1.GitSecretKeyUsername: []byte(g.srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(g.srv.Token)},
	}, metav1.CreateOptions{})
	require.NoError(tb, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: g.srv.URL, AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	require.NoError(tb, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: cloneURL, AllowInsecureLoopbackHTTP: true,
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}, Owner: g.srv.AdminUser, Name: "app",
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}}},
	}, metav1.CreateOptions{})
	require.NoError(tb, err)
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			ActiveCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "health"}},
			Environments:         []promoterv1alpha1.Environment{{Branch: "prod"}}},
	}, metav1.CreateOptions{})
	require.NoError(tb, err)
	_, err = env.Sluice.RollbackV1alpha1().RollbackPolicies(ns).Create(ctx, &rollbackv1alpha1.RollbackPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: rollbackv1alpha1.RollbackPolicySpec{
			PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"},
			Trigger: rollbackv1alpha1.RollbackTriggerSpec{CommitStatuses: []rollbackv1alpha1.CommitStatusKey{{Key: "health"}},
				FailureThreshold: &metav1.Duration{}, Window: &metav1.Duration{Duration: time.Hour}},
			Cooldown:               &metav1.Duration{Duration: cooldown},
			RequiredCommitStatuses: g.checks,
		},
	}, metav1.CreateOptions{})
	require.NoError(tb, err)
}

// dry commits to the dry branch.
func (g *onGitea) dry(msg string) string {
	g.tb.Helper()
	_ = g.repo.Fetch(g.ctx, "main")
	sha, err := g.repo.CommitFiles(g.ctx, git.CommitRequest{Branch: "main", Files: map[string][]byte{"values.yaml": []byte(msg + "\n")}, Message: msg})
	require.NoError(g.tb, err)
	return sha
}

// commit writes a hydrated commit for dry on branch, with the hydrator.metadata file.
func (g *onGitea) commit(branch, dry, manifest string) string {
	g.tb.Helper()
	sha, err := g.repo.CommitFiles(g.ctx, git.CommitRequest{Branch: branch, Message: "hydrate " + dry[:7], Files: map[string][]byte{
		"hydrator.metadata": hydratorNote(dry), "manifest.yaml": []byte(manifest)}})
	require.NoError(g.tb, err)
	return sha
}

// promote hydrates dry onto prod-next, started again from prod as a hydrator does, and waits
// until the promoter merged it on Gitea.
func (g *onGitea) promote(dry, manifest string) promoterv1alpha1.EnvironmentStatus {
	g.tb.Helper()
	err := g.repo.Fetch(g.ctx, "prod", "prod-next")
	var missing *git.BranchNotFoundError
	if err != nil && !(errors.As(err, &missing) && missing.Branches[0] == "prod-next") {
		require.NoError(g.tb, err)
	}
	prod, err := g.repo.Resolve("prod")
	require.NoError(g.tb, err)
	next, _ := g.repo.Resolve("prod-next")
	require.NoError(g.tb, g.repo.Push(g.ctx, "prod-next", prod, next), "prod contains prod-next: a fast-forward")
	g.commit("prod-next", dry, manifest)
	g.refresh()
	return g.waitProd("promoted to "+dry[:7], func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Active.DrySHA == dry && len(e.History) > 0 && e.History[0].DrySHA == dry
	})
}

func (g *onGitea) refresh() {
	g.tb.Helper()
	_, err := testenv.Update(g.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(g.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, time.Now().Format(time.RFC3339Nano))
	})
	require.NoError(g.tb, err)
}

func (g *onGitea) waitProd(what string, cond func(promoterv1alpha1.EnvironmentStatus) bool) promoterv1alpha1.EnvironmentStatus {
	g.tb.Helper()
	var last promoterv1alpha1.EnvironmentStatus
	require.NoError(g.tb, testenv.Wait(g.ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(g.ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil || len(ps.Status.Environments) == 0 {
			return false, err
		}
		last = ps.Status.Environments[0]
		return cond(last), nil
	}), "prod: %s; last %+v", what, last)
	return last
}

// setHealth writes prod's health CommitStatus on sha, as the health-controller does.
func (g *onGitea) setHealth(sha string, phase commitstatusv1alpha1.CommitStatusPhase) {
	g.tb.Helper()
	g.setCheck("health", sha, phase)
}

// setCheck writes the CommitStatus of key on sha.
func (g *onGitea) setCheck(key, sha string, phase commitstatusv1alpha1.CommitStatusPhase) {
	g.tb.Helper()
	name := key + "-" + sha[:10]
	_, err := testenv.Update(g.ctx, env.Sluice.CommitstatusV1alpha1().CommitStatuses(g.ns), name, func(cs *commitstatusv1alpha1.CommitStatus) {
		cs.Spec.Phase = phase
	})
	if err == nil {
		return
	}
	_, err = env.Sluice.CommitstatusV1alpha1().CommitStatuses(g.ns).Create(g.ctx, &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{commitstatusv1alpha1.KeyLabel: key}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"},
			SHA: sha, Name: key, Phase: phase, Description: key + " of " + sha[:7]},
	}, metav1.CreateOptions{})
	require.NoError(g.tb, err)
}

// goodThenBad promotes a healthy dry commit then a bad one, and returns the bad one's status.
func (g *onGitea) goodThenBad(i int) (good, bad promoterv1alpha1.EnvironmentStatus) {
	g.tb.Helper()
	good = g.promote(g.dry(fmt.Sprint("good ", i)), fmt.Sprintf("image: web:%d\n", 2*i+1))
	g.setHealth(good.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusSuccess)
	good = g.waitProd("healthy", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return len(e.LastHealthyDrySHAs) > 0 && e.LastHealthyDrySHAs[0].SHA == good.Active.DrySHA
	})
	bad = g.promote(g.dry(fmt.Sprint("bad ", i)), fmt.Sprintf("image: web:%d\n", 2*i+2))
	return good, bad
}

// failAndWaitRestored fails bad's health and waits until the policy's revert is merged.
func (g *onGitea) failAndWaitRestored(bad promoterv1alpha1.EnvironmentStatus) *rollbackv1alpha1.RevertCommit {
	g.tb.Helper()
	g.setHealth(bad.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusFailure)
	name := rollbackpolicy.RevertCommitName("prod", "prod", bad.Active.DrySHA)
	var rc *rollbackv1alpha1.RevertCommit
	checked := ""
	require.NoError(g.tb, testenv.Wait(g.ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		rc, err = env.Sluice.RollbackV1alpha1().RevertCommits(g.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if sha := rc.Status.RevertSHA; sha != "" && sha != checked && len(g.checks) > 0 {
			for _, k := range g.checks {
				g.setCheck(k.Key, sha, commitstatusv1alpha1.CommitStatusSuccess)
			}
			checked = sha
		}
		return rc.Status.Phase == rollbackv1alpha1.RevertMerged, nil
	}), "revert %s merged; last %+v", name, statusOf(rc))
	return rc
}

type giteaPull struct {
	Number int64  `json:"number"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
	URL    string `json:"html_url"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

// End to end on a real Gitea: a failing health check after a promotion makes the policy's revert,
// whose pull request is opened and merged on Gitea by the promoter-controller.
func TestRollbackOnGitea(t *testing.T) {
	g := newOnGitea(t, time.Hour)
	good, bad := g.goodThenBad(0)

	rc := g.failAndWaitRestored(bad)

	require.NotNil(t, rc.Status.PullRequest)
	assert.Contains(t, rc.Status.PullRequest.URL, g.srv.URL+"/"+g.srv.AdminUser+"/app/pulls/")
	// The branch moves before Gitea's merge call returns and the pull request says merged: the
	// controller sees the merge in git first.
	var pulls, reverts []giteaPull
	require.NoError(t, testenv.Wait(g.ctx, time.Minute, func(ctx context.Context) (bool, error) {
		pulls, reverts = nil, nil
		if err := g.srv.API(ctx, "GET", "/repos/"+g.srv.AdminUser+"/app/pulls?state=all", nil, &pulls); err != nil {
			return false, err
		}
		for _, p := range pulls {
			if p.Head.Ref == rc.Status.RevertBranch {
				reverts = append(reverts, p)
			}
		}
		return len(reverts) == 1 && reverts[0].Merged, nil
	}), "one revert pull request on Gitea, merged: %+v", pulls)
	assert.Equal(t, "prod", reverts[0].Base.Ref)
	assert.Equal(t, reverts[0].URL, rc.Status.PullRequest.URL)

	// Gitea merged fast-forward-only (the revert carries the base it was written on): prod holds
	// the revert commit, with its note.
	g.refresh()
	back := g.waitProd("back on the good dry SHA", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Active.DrySHA == good.Active.DrySHA
	})
	require.NoError(t, g.repo.Fetch(g.ctx, "prod", rc.Status.RevertBranch))
	in, err := g.repo.IsAncestor(rc.Status.RevertSHA, back.Active.HydratedSHA)
	require.NoError(t, err)
	tip, err := g.repo.Commit(back.Active.HydratedSHA)
	require.NoError(t, err)
	assert.True(t, in, "prod %s (parents %v) merged the revert commit %s (merge %s)", tip.SHA, tip.Parents, rc.Status.RevertSHA, rc.Status.MergeSHA)
	var file struct {
		Content string `json:"content"`
	}
	require.NoError(t, g.srv.API(g.ctx, "GET", "/repos/"+g.srv.AdminUser+"/app/contents/manifest.yaml?ref=prod", nil, &file))
	manifest, err := base64.StdEncoding.DecodeString(file.Content)
	require.NoError(t, err)
	assert.Equal(t, "image: web:1\n", string(manifest), "prod holds the good manifests again")
}
