package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// environments of the promotion, in order.
var environments = []string{"dev", "staging", "prod"}

// promotion is a PromotionStrategy dev -> staging -> prod on a repository of the Gitea pod,
// with the test as the hydrator.
type promotion struct {
	c    *Cluster
	ns   string
	srv  *gitea.Server
	repo *git.Repository
	// diagnostics, when set, adds to a failed wait's message (the logs of deleted pods).
	diagnostics func() string
}

const webhookSecret = "e2e-webhook-secret"

// newPromotion creates the repository on Gitea with a dry commit hydrated onto every
// environment, and the Secret, ScmProvider, ScmRepository and PromotionStrategy that reach it
// through the Gitea Service, with the cluster CA as the provider's CA bundle. interval is the
// strategy's fallback poll.
func (c *Cluster) newPromotion(t *testing.T, ns string, server gitServer, interval time.Duration) *promotion {
	t.Helper()
	ctx := context.Background()
	srv, caPEM := server.Server, server.CAPEM
	cloneURL, err := srv.CreateRepo(ctx, "web-deploy")
	require.NoError(t, err)
	// The controllers reach Gitea by its Service's name, through the cluster DNS; the host by
	// address.
	inCluster := server.InClusterURL
	require.True(t, strings.HasPrefix(cloneURL, srv.URL+"/"), "Gitea's clone URL %s is under %s", cloneURL, srv.URL)
	inClusterCloneURL := inCluster + strings.TrimPrefix(cloneURL, srv.URL)
	cache, err := git.NewCache(t.TempDir(), nil)
	require.NoError(t, err)
	repo, err := cache.Open(cloneURL, git.Auth{Username: srv.AdminUser, Password: srv.Token, CABundle: caPEM}, git.Options{})
	require.NoError(t, err)
	p := &promotion{c: c, ns: ns, srv: srv, repo: repo}
	d0 := p.dryCommit(t, "web 1.0.0")
	for _, env := range environments {
		p.hydrate(t, "", env, d0)
	}
	_, err = c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken: []byte(srv.Token), scmv1alpha1.SecretKeyWebhookSecret: []byte(webhookSecret),
			scmv1alpha1.GitSecretKeyUsername: []byte(srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(srv.Token),
			scmv1alpha1.DefaultCABundleKey: caPEM,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	scm := c.Sluice.ScmV1alpha1()
	_, err = scm.ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type: scmv1alpha1.ScmProviderGitea, BaseURL: inCluster,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"},
			CABundle:  &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "gitea"},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = scm.ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "web-deploy"},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: inClusterCloneURL, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"},
			Owner: srv.AdminUser, Name: "web-deploy",
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var envs []promoterv1alpha1.Environment
	for _, env := range environments {
		envs = append(envs, promoterv1alpha1.Environment{Branch: env})
	}
	_, err = c.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "web-deploy"}, DryBranch: "main",
			Interval: &metav1.Duration{Duration: interval}, Environments: envs,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, env := range environments {
		p.waitEnvironment(t, env, "runs the first dry commit", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == d0 })
	}
	return p
}

func (p *promotion) dryCommit(t *testing.T, msg string) string {
	t.Helper()
	ctx := context.Background()
	_ = p.repo.Fetch(ctx, "main")
	sha, err := p.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: "main", Message: msg, Files: map[string][]byte{"apps/web/values.yaml": []byte("release: " + msg + "\n")},
	})
	require.NoError(t, err)
	return sha
}

// hydrate writes dry, rendered, onto branch (created from base when missing), with the
// hydrator.metadata file, as Argo CD's source hydrator lays it out.
func (p *promotion) hydrate(t *testing.T, base, branch, dry string) string {
	t.Helper()
	ctx := context.Background()
	_ = p.repo.Fetch(ctx, base, branch)
	if _, err := p.repo.Resolve(branch); err != nil && base != "" {
		tip, err := p.repo.Resolve(base)
		require.NoError(t, err)
		require.NoError(t, p.repo.CreateBranch(ctx, branch, tip))
		require.NoError(t, p.repo.Fetch(ctx, branch))
	}
	sha, err := p.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: branch, Message: "hydrate " + dry[:7],
		Files: map[string][]byte{
			"hydrator.metadata": []byte(fmt.Sprintf(`{"drySha":%q}`, dry)),
			"manifest.yaml":     []byte("# " + branch + " " + dry + "\n"),
		},
	})
	require.NoError(t, err)
	return sha
}

// propose commits a new dry change and hydrates it onto every <env>-next branch.
func (p *promotion) propose(t *testing.T, msg string) string {
	t.Helper()
	dry := p.dryCommit(t, msg)
	for _, env := range environments {
		p.hydrate(t, env, env+"-next", dry)
	}
	return dry
}

func (p *promotion) waitEnvironment(t *testing.T, env, what string, cond func(promoterv1alpha1.EnvironmentStatus) bool) promoterv1alpha1.EnvironmentStatus {
	t.Helper()
	last, err := testenv.WaitEnvironment(context.Background(), 3*time.Minute, p.c.Sluice, p.ns, "web", env, cond)
	if err != nil {
		t.Fatalf("environment %s %s (last: active dry %q, blocked %q): %v\n%s", env, what, last.Active.DrySHA, last.Blocked, err, p.describe())
	}
	return last
}

// describe is what a failed wait needs: the strategy's status, the PullRequest objects, the
// pull requests on Gitea and the promoter's logs.
func (p *promotion) describe() string {
	ctx := context.Background()
	var b strings.Builder
	if s, err := p.c.Sluice.PromoterV1alpha1().PromotionStrategies(p.ns).Get(ctx, "web", metav1.GetOptions{}); err == nil {
		out, _ := yaml.Marshal(s.Status)
		fmt.Fprintf(&b, "PromotionStrategy web status:\n%s\n", out)
	}
	if prs, err := p.c.Sluice.PromoterV1alpha1().PullRequests(p.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, pr := range prs.Items {
			out, _ := yaml.Marshal(map[string]any{"spec": pr.Spec, "status": pr.Status, "uid": pr.UID, "resourceVersion": pr.ResourceVersion})
			fmt.Fprintf(&b, "PullRequest %s:\n%s\n", pr.Name, out)
		}
	}
	var prs []pull
	if err := p.srv.API(ctx, "GET", "/repos/"+p.srv.AdminUser+"/web-deploy/pulls?state=all&limit=50", nil, &prs); err == nil {
		fmt.Fprintf(&b, "pull requests on Gitea: %+v\n", prs)
	}
	if p.diagnostics != nil {
		b.WriteString(p.diagnostics())
	}
	b.WriteString(p.c.controllerLogs("promoter-controller"))
	return b.String()
}

// pull is what the suite reads of a pull request on Gitea.
type pull struct {
	Number int64  `json:"number"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
	Title  string `json:"title"`
	Base   struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Head struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
}

func (p *promotion) pulls(t *testing.T) []pull {
	t.Helper()
	var prs []pull
	require.NoError(t, p.srv.API(context.Background(), "GET", "/repos/"+p.srv.AdminUser+"/web-deploy/pulls?state=all&limit=50", nil, &prs))
	return prs
}

// addWebhook makes Gitea deliver pushes and pull request events, signed, to url.
func (p *promotion) addWebhook(t *testing.T, url string) {
	t.Helper()
	require.NoError(t, p.srv.API(context.Background(), "POST", "/repos/"+p.srv.AdminUser+"/web-deploy/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"push", "pull_request"},
		"config": map[string]string{"url": url, "content_type": "json", "secret": webhookSecret},
	}, nil))
}
