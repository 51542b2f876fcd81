package demo

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// gitHost is where a promotion's repository lives: served by the demo over HTTP (plain git, the
// default), or on a local Gitea with SCM=gitea. Flux fetches each environment branch from it.
type gitHost struct {
	url       string
	auth      git.Auth
	manifests string
	// fluxSecret names the Secret a GitRepository reads the repository's credentials from, if it
	// needs one.
	fluxSecret string
	// repo is the demo's clone, when the demo serves the repository itself.
	repo  *git.Repository
	close func()
	// pulls shows the pull requests on the SCM, when there is one.
	pulls func(context.Context) error
}

// promotionHost creates the repository name, empty, where the chapter's PromotionStrategy and
// Flux find it.
func promotionHost(ctx context.Context, s *Story, name string) (*gitHost, error) {
	if os.Getenv("SCM") == "gitea" {
		return giteaPromotionHost(ctx, s, name)
	}
	s.Step("the demo serves a git repository over HTTP and acts as the hydrator")
	repo, err := s.newRepo(name)
	if err != nil {
		return nil, err
	}
	return &gitHost{
		url:   repo.url,
		repo:  repo.repo,
		close: func() {},
		manifests: fmt.Sprintf(`
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmProvider
metadata: {name: plain-git}
spec: {type: git}          # plain git: the PullRequest object is the pull request, merged with go-git
---
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmRepository
metadata: {name: web-deploy}
spec:
  url: %s
  allowInsecureLoopbackHTTP: true
  providerRef: {name: plain-git}
  owner: demo
  name: %s`, repo.url, name),
	}, nil
}

// hydrator opens the host's repository for the demo's hydrator.
func (g *gitHost) hydrator(app, badInProd string) (*hydrator, error) {
	if g.repo != nil {
		return &hydrator{repo: g.repo, app: app, badInProd: badInProd}, nil
	}
	dir, err := os.MkdirTemp("", "sluice-demo-hydrator-")
	if err != nil {
		return nil, err
	}
	closeHost := g.close
	g.close = func() { closeHost(); _ = os.RemoveAll(dir) }
	cache, err := git.NewCache(dir, nil)
	if err != nil {
		return nil, err
	}
	repo, err := cache.Open(g.url, g.auth, git.Options{})
	if err != nil {
		return nil, err
	}
	return &hydrator{repo: repo, app: app, badInProd: badInProd}, nil
}

func giteaPromotionHost(ctx context.Context, s *Story, name string) (*gitHost, error) {
	s.Step("SCM=gitea: a local Gitea holds the repository; pull requests are opened and merged there")
	srv, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return nil, err
	}
	url, err := srv.CreateRepo(ctx, name)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-promoter", Namespace: s.Namespace},
		StringData: map[string]string{"token": srv.Token, "username": srv.AdminUser, "password": srv.Token},
	}
	if _, err := s.Env.Kube.CoreV1().Secrets(s.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		_ = srv.Close()
		return nil, err
	}
	s.Say("Gitea %s; its token is in Secret gitea-promoter (not shown), which Flux reads too", srv.URL)
	return &gitHost{
		url:        url,
		auth:       git.Auth{Username: srv.AdminUser, Password: srv.Token},
		fluxSecret: "gitea-promoter",
		close:      func() { _ = srv.Close() },
		manifests: fmt.Sprintf(`
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmProvider
metadata: {name: gitea-promoter}
spec:
  type: gitea
  baseURL: %s
  allowInsecureLoopbackHTTP: true
  secretRef: {name: gitea-promoter}
---
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmRepository
metadata: {name: web-deploy}
spec:
  url: %s
  allowInsecureLoopbackHTTP: true
  providerRef: {name: gitea-promoter}
  owner: %s
  name: %s
  auth: {type: basic, secretRef: {name: gitea-promoter}}`, srv.URL, url, srv.AdminUser, name),
		pulls: func(ctx context.Context) error { return showPulls(ctx, s, srv, name) },
	}, nil
}

// showPulls prints the repository's pull requests on Gitea.
func showPulls(ctx context.Context, s *Story, srv *gitea.Server, repo string) error {
	var prs []struct {
		Number int64  `json:"number"`
		Title  string `json:"title"`
		Merged bool   `json:"merged"`
		URL    string `json:"html_url"`
	}
	if err := srv.API(ctx, "GET", "/repos/"+srv.AdminUser+"/"+repo+"/pulls?state=all", nil, &prs); err != nil {
		return err
	}
	for _, p := range prs {
		s.Say("Gitea pull request #%d merged=%t %s  %s", p.Number, p.Merged, p.URL, p.Title)
	}
	return nil
}

// deployEnvironments has Flux deploy each environment branch of host with its own GitRepository
// and Kustomization, <app>-<env>, and a HealthCheck of the same name judge what Flux applied
// there: its verdict is the CommitStatus with key health on the commit Flux applied, which the
// next environment's promotion waits for. It waits until Flux has applied dry everywhere.
func (s *Story) deployEnvironments(ctx context.Context, host *gitHost, app, dry string) error {
	s.Step("Flux deploys each environment branch with its own GitRepository and Kustomization, and a HealthCheck judges what it applied")
	s.Say("the interval is an hour: Flux learns of each merge from the promoter, which asks the sources that track the")
	s.Say("branch to fetch at once (reconcile.fluxcd.io/requestedAt, as `flux reconcile source git` does)")
	s.Say("each HealthCheck reads as ServiceAccount health-reader, allowed this namespace's ConfigMaps, Deployments and Kustomizations")
	if err := s.applyQuietly(ctx, healthReader(s.Namespace)); err != nil {
		return err
	}
	for i, env := range promotionEnvs {
		manifest := s.fluxDeploys(deployment{name: app + "-" + env, url: host.url, branch: env, interval: "1h", secret: host.fluxSecret}) +
			"---" + environmentHealth(app, env)
		var err error
		if i == 0 {
			err = s.Apply(ctx, manifest)
		} else {
			s.Say("and the same for %s:", env)
			err = s.applyQuietly(ctx, manifest)
		}
		if err != nil {
			return err
		}
	}
	started := time.Now()
	for _, env := range promotionEnvs {
		if err := s.waitConfigMap(ctx, app+"-"+env, "dry", dry); err != nil {
			return err
		}
	}
	s.Say("Flux applied dry %s in every environment within %.1fs", dry[:7], time.Since(started).Seconds())
	_, err := s.Kubectl(ctx, "get", "kustomizations,healthchecks")
	return err
}

// environmentHealth is the HealthCheck of an environment: the ConfigMap Flux applied there is
// healthy when its data say so.
func environmentHealth(app, env string) string {
	return fmt.Sprintf(`
apiVersion: health.sluice.dev/v1alpha1
kind: HealthCheck
metadata: {name: %[1]s-%[2]s}
spec:
  serviceAccountName: health-reader
  targets: [{kustomization: {name: %[1]s-%[2]s}}]
  healthCheckExprs:
    - apiVersion: v1
      kind: ConfigMap
      current: "self.data.healthy == 'true'"
      failed: "self.data.healthy == 'false'"
  commitStatus:
    key: health
    repositoryRef: {name: web-deploy}
    revision: {kustomization: {name: %[1]s-%[2]s}}
`, app, env)
}

// waitEnvironmentApplied waits until Flux has applied dry in env: the ConfigMap <app>-<env> says so.
func (s *Story) waitEnvironmentApplied(ctx context.Context, app, env, dry string) error {
	started := time.Now()
	if err := s.waitConfigMap(ctx, app+"-"+env, "dry", dry); err != nil {
		return err
	}
	s.Say("Flux applied %s's merge: ConfigMap %s-%s runs dry %s (waited %.1fs)", env, app, env, dry[:7], time.Since(started).Seconds())
	return nil
}

func shortOf(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
