package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	receiver "github.com/sluicehq/sluice/promoter-controller/internal/webhook"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// hydrateTo writes a hydrated commit for dry onto branch (created from base when missing), with
// the hydrator.metadata file, as Argo CD's source hydrator lays it out.
// giteaRepo starts a Gitea server with a repository "app" whose main branch holds one dry
// commit of files, and returns the server, the repository's clone URL, a clone and that commit.
func giteaRepo(t testing.TB, files map[string][]byte) (*giteatest.Server, string, *git.Repository, string) {
	t.Helper()
	ctx := context.Background()
	srv := giteatest.StartForTest(t)
	cloneURL, err := srv.CreateRepo(ctx, "app")
	require.NoError(t, err)
	cache, err := git.NewCache(t.TempDir(), nil)
	require.NoError(t, err)
	repo, err := cache.Open(cloneURL, git.Auth{Username: srv.AdminUser, Password: srv.Token}, git.Options{})
	require.NoError(t, err)
	_ = repo.Fetch(ctx, "main")
	dry, err := repo.CommitFiles(ctx, git.CommitRequest{Branch: "main", Files: files, Message: "initial"})
	require.NoError(t, err)
	return srv, cloneURL, repo, dry
}

func hydrateTo(t testing.TB, repo *git.Repository, base, branch, dry, content string) string {
	t.Helper()
	ctx := context.Background()
	_ = repo.Fetch(ctx, base, branch)
	if _, err := repo.Resolve(branch); err != nil && base != "" {
		tip, err := repo.Resolve(base)
		require.NoError(t, err)
		require.NoError(t, repo.CreateBranch(ctx, branch, tip))
		require.NoError(t, repo.Fetch(ctx, branch))
	}
	sha, err := repo.CommitFiles(ctx, git.CommitRequest{
		Branch:  branch,
		Files:   map[string][]byte{"hydrator.metadata": []byte(fmt.Sprintf(`{"drySha":%q}`, dry)), "manifest.yaml": []byte(content)},
		Message: "hydrate " + dry[:7],
	})
	require.NoError(t, err)
	return sha
}

// End to end on a real Gitea: pushes and pull request events delivered by Gitea's signed
// webhooks, pull requests opened and merged there, gated by a status set there and mirrored in
// the cluster.
func TestPromotionOnGitea(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	srv, cloneURL, repo, d0 := giteaRepo(t, map[string][]byte{"values.yaml": []byte("v: 0\n")})
	hydrateTo(t, repo, "", "dev", d0, "v: 0\n")
	hydrateTo(t, repo, "", "staging", d0, "v: 0\n")

	giteaPromoter(t, f, srv, cloneURL)

	_ = repo.Fetch(ctx, "main")
	d1, err := repo.CommitFiles(ctx, git.CommitRequest{Branch: "main", Files: map[string][]byte{"values.yaml": []byte("v: 1\n")}, Message: "bump to 1"})
	require.NoError(t, err)
	devNext := hydrateTo(t, repo, "dev", "dev-next", d1, "dev v: 1\n")
	hydrateTo(t, repo, "staging", "staging-next", d1, "staging v: 1\n")

	// The pull request opens on Gitea and waits for lint.
	dev := f.waitEnv("dev", "pull request open on Gitea, blocked by lint", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.PullRequest != nil && e.PullRequest.URL != "" && !e.Eligible && e.Proposed.HydratedSHA == devNext
	})
	prs, err := giteaPulls(ctx, srv)
	require.NoError(t, err)
	require.Len(t, prs, 1, "one pull request for dev; staging waits for dev")
	assert.Equal(t, "open", prs[0].State)
	assert.Contains(t, dev.PullRequest.URL, fmt.Sprintf("/pulls/%d", prs[0].Number))

	giteaLintPasses(t, f, srv, devNext)

	f.waitEnv("dev", "merged on Gitea", testenv.ActiveOn(d1))
	f.waitEnv("staging", "merged on Gitea", testenv.ActiveOn(d1))
	staging := f.waitEnv("staging", "recorded", func(e promoterv1alpha1.EnvironmentStatus) bool { return len(e.History) == 1 })
	assert.False(t, staging.History[0].External)
	// History names the pull request on Gitea, which a later promotion's object (same name) does not.
	assert.Positive(t, staging.History[0].PullRequestNumber)
	assert.Contains(t, staging.History[0].PullRequestURL, fmt.Sprintf("/pulls/%d", staging.History[0].PullRequestNumber))

	require.NoError(t, testenv.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		prs, err = giteaPulls(ctx, srv)
		if err != nil {
			return false, err
		}
		merged := 0
		for _, p := range prs {
			if p.Merged {
				merged++
			}
		}
		return len(prs) == 2 && merged == 2, nil
	}), "two pull requests on Gitea, both merged once: %+v", prs)
}

// giteaPromoter starts the promoter on the strategy of giteaStrategy, and Gitea delivers pushes
// and pull request events to its receiver, signed.
func giteaPromoter(t *testing.T, f *fixture, srv *giteatest.Server, cloneURL string) {
	t.Helper()
	giteaStrategy(t, f, srv, cloneURL)
	hooks, addr := webhookConfig(t, t.TempDir())
	startPromoterWith(t, env.Config, hooks)
	require.NoError(t, srv.API(f.ctx, "POST", "/repos/"+srv.AdminUser+"/app/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"push", "pull_request"},
		"config": map[string]string{
			"url":          fmt.Sprintf("http://%s%s%s/gitea", addr, receiver.WebhookPath, f.ns),
			"content_type": "json", "secret": "hook-secret",
		},
	}, nil))
}

// giteaLintPasses sets lint on sha to success: on Gitea (as the commitstatus-controller would
// mirror it) and in the cluster.
func giteaLintPasses(t *testing.T, f *fixture, srv *giteatest.Server, sha string) {
	t.Helper()
	require.NoError(t, srv.API(f.ctx, "POST", "/repos/"+srv.AdminUser+"/app/statuses/"+sha,
		map[string]string{"state": "success", "context": "lint", "description": "lint passed"}, nil))
	_, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(f.ns).Create(f.ctx, &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: "lint-dev", Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "lint"}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "gitea-app"}, SHA: sha, Name: "lint", Phase: commitstatusv1alpha1.CommitStatusSuccess,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// giteaStrategy points a strategy for dev and staging at the Gitea repository cloneURL, with
// the ScmProvider and Secret that reach it.
func giteaStrategy(t *testing.T, f *fixture, srv *giteatest.Server, cloneURL string) {
	t.Helper()
	ctx := f.ctx
	_, err := env.Kube.CoreV1().Secrets(f.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken: []byte(srv.Token), scmv1alpha1.SecretKeyWebhookSecret: []byte("hook-secret"),
			scmv1alpha1.GitSecretKeyUsername: []byte(srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(srv.Token),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: srv.URL, AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(f.ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-app"},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: cloneURL, AllowInsecureLoopbackHTTP: true, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"},
			Owner: srv.AdminUser, Name: "app",
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.RepositoryRef.Name = "gitea-app"
		// Deliveries drive this test; TestWebhook* prove a delivery alone wakes a strategy. A
		// short fallback poll keeps one delivery lost on a loaded machine from failing the
		// scenario: CI once saw no proposal within a minute after Gitea's push.
		s.Interval = &metav1.Duration{Duration: 20 * time.Second}
		s.ActiveCommitStatuses = nil
		s.Environments = []promoterv1alpha1.Environment{
			{Branch: "dev", ProposedCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "lint"}}},
			{Branch: "staging"},
		}
	})
}

// giteaPull is what the test reads of a pull request on Gitea.
type giteaPull struct {
	Number int64  `json:"number"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
}

func giteaPulls(ctx context.Context, srv *giteatest.Server) ([]giteaPull, error) {
	var prs []giteaPull
	err := srv.API(ctx, "GET", "/repos/"+srv.AdminUser+"/app/pulls?state=all", nil, &prs)
	return prs, err
}
