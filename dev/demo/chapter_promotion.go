package demo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// promotionEnvs are the environments of the promotion chapter, in order.
var promotionEnvs = []string{"dev", "staging", "prod"}

// chapterPromotion: a dry commit is hydrated onto dev-next, staging-next and prod-next by the demo
// itself (acting as the hydrator), promoted through dev and staging by merges the
// promoter-controller makes with go-git, held at prod by a closed Gate, released, and promoted.
// The git repository is served over HTTP by the demo process; with SCM=gitea it lives on a local
// Gitea, where the pull requests are opened and merged.
func chapterPromotion(ctx context.Context, s *Story) error {
	host, err := promotionHost(ctx, s)
	if err != nil {
		return err
	}
	defer host.close()
	cacheDir, err := os.MkdirTemp("", "sluice-demo-hydrator-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cacheDir)
	cache, err := git.NewCache(cacheDir, nil)
	if err != nil {
		return err
	}
	repo, err := cache.Open(host.url, host.auth, git.Options{})
	if err != nil {
		return err
	}
	h := &hydrator{repo: repo}
	d0, err := h.dryCommit(ctx, "web 1.0.0")
	if err != nil {
		return err
	}
	for _, env := range promotionEnvs {
		if _, err := h.commit(ctx, env, d0, env+": web 1.0.0"); err != nil {
			return err
		}
	}
	s.Say("%s: branch main (dry) at %s; dev, staging and prod hydrated from it", host.url, d0[:7])

	s.Step("a PromotionStrategy: dev -> staging -> prod, each waiting for the previous one's health, prod behind a Gate")
	if err := s.Apply(ctx, host.manifests+`
---
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata: {name: prod-release}
spec:
  closed: true
  message: release sign-off pending
---
apiVersion: promoter.sluice.dev/v1alpha1
kind: PromotionStrategy
metadata: {name: web}
spec:
  repositoryRef: {name: web-deploy}
  dryBranch: main
  activeCommitStatuses: [{key: health}]
  environments:
    - branch: dev
    - branch: staging
    - branch: prod
      gates: {refs: [{name: prod-release}]}
`); err != nil {
		return err
	}
	if err := s.waitGate(ctx, "prod-release", func(g *gatingv1alpha1.Gate) bool { return !g.Status.Open }); err != nil {
		return err
	}

	s.Step("a developer commits to the dry branch; the hydrator renders it onto dev-next, staging-next and prod-next with hydrator notes")
	d1, err := h.dryCommit(ctx, "web 1.1.0")
	if err != nil {
		return err
	}
	for _, env := range promotionEnvs {
		if err := h.propose(ctx, env, d1, env+": web 1.1.0"); err != nil {
			return err
		}
	}
	s.Say("dry commit %s; the hydrator's CI asks for a refresh (on GitHub, GitLab or Gitea a signed webhook does it)", d1[:7])
	if _, err := s.Kubectl(ctx, "annotate", "promotionstrategy", "web", "--overwrite", promoterv1alpha1.RefreshAnnotation+"="+d1[:7]); err != nil {
		return err
	}

	s.Step("the promoter merges dev-next into dev at once: dev has no earlier environment")
	dev, err := s.waitEnvironment(ctx, "web", "dev", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == d1 })
	if err != nil {
		return err
	}
	if _, err := s.waitEnvironment(ctx, "web", "staging", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return strings.Contains(e.Blocked, "health on dev")
	}); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "promotionstrategy,pullrequests"); err != nil {
		return err
	}
	s.Say("staging waits: rule 3, dev's active commit must be healthy")

	s.Step("dev turns healthy (a CommitStatus, as the health-controller writes it): staging is promoted")
	if err := s.commitStatus(ctx, "health", dev.Active.HydratedSHA); err != nil {
		return err
	}
	staging, err := s.waitEnvironment(ctx, "web", "staging", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == d1 })
	if err != nil {
		return err
	}
	if err := s.commitStatus(ctx, "health", staging.Active.HydratedSHA); err != nil {
		return err
	}

	s.Step("staging is healthy too, but the closed Gate holds prod")
	prod, err := s.waitEnvironment(ctx, "web", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool {
		// Only the gate holds it now: rules 2 and 3 pass.
		return strings.HasPrefix(e.Blocked, "gates hold") && e.Active.DrySHA != d1
	})
	if err != nil {
		return err
	}
	s.Say("prod: %s", prod.Blocked)

	s.Step("release sign-off: the Gate opens and prod is promoted")
	if err := s.Apply(ctx, `
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata: {name: prod-release}
spec:
  closed: false
`); err != nil {
		return err
	}
	prod, err = s.waitEnvironment(ctx, "web", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Active.DrySHA == d1 && len(e.History) > 0
	})
	if err != nil {
		return err
	}
	s.Say("prod runs dry %s (merge %s)", d1[:7], shortOf(prod.History[0].MergeSHA))
	if host.pulls != nil {
		if err := host.pulls(ctx); err != nil {
			return err
		}
	}
	if _, err := s.Kubectl(ctx, "get", "promotionstrategy,pullrequests,proposedcommits"); err != nil {
		return err
	}
	_, err = s.Kubectl(ctx, "get", "events", "--field-selector", "involvedObject.kind=PromotionStrategy", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	return err
}

// hydrator writes dry and hydrated commits the way Argo CD's source hydrator lays them out.
type hydrator struct{ repo *git.Repository }

func (h *hydrator) dryCommit(ctx context.Context, msg string) (string, error) {
	_ = h.repo.Fetch(ctx, "main")
	return h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: "main", Message: msg,
		Files: map[string][]byte{"apps/web/values.yaml": []byte("image: ghcr.io/example/web:" + strings.TrimPrefix(msg, "web ") + "\n")},
	})
}

func (h *hydrator) commit(ctx context.Context, branch, dry, msg string) (string, error) {
	_ = h.repo.Fetch(ctx, branch)
	return h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: branch, Message: msg,
		Files: map[string][]byte{"web.yaml": []byte("# " + msg + "\n"), git.DefaultMetadataFile: git.HydratorNote(dry)},
	})
}

// propose renders dry onto <env>-next, on top of <env>, and records the dry SHA in a git note.
func (h *hydrator) propose(ctx context.Context, env, dry, msg string) error {
	if err := h.repo.Fetch(ctx, env); err != nil {
		return err
	}
	tip, err := h.repo.Resolve(env)
	if err != nil {
		return err
	}
	if err := h.repo.CreateBranch(ctx, env+"-next", tip); err != nil {
		return err
	}
	sha, err := h.commit(ctx, env+"-next", dry, msg)
	if err != nil {
		return err
	}
	_ = h.repo.Fetch(ctx, env+"-next")
	return h.repo.AddNote(ctx, sha, git.HydratorNote(dry), git.Identity{Name: "hydrator", Email: "hydrator@example.com"})
}

// commitStatus records a passing check on a hydrated commit.
func (s *Story) commitStatus(ctx context.Context, key, sha string) error {
	_, err := s.Env.Sluice.CommitstatusV1alpha1().CommitStatuses(s.Namespace).Create(ctx, &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: key + "-" + sha[:12], Labels: map[string]string{commitstatusv1alpha1.KeyLabel: key}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "web-deploy"}, SHA: sha, Name: key,
			Phase: commitstatusv1alpha1.CommitStatusSuccess, Description: "rollout healthy",
		},
	}, metav1.CreateOptions{})
	if err == nil {
		s.Say("CommitStatus %s=success on %s", key, sha[:7])
	}
	return err
}

// waitEnvironment waits until an environment of a strategy satisfies cond.
func (s *Story) waitEnvironment(ctx context.Context, strategy, branch string, cond func(promoterv1alpha1.EnvironmentStatus) bool) (promoterv1alpha1.EnvironmentStatus, error) {
	var last promoterv1alpha1.EnvironmentStatus
	err := testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		ps, err := s.Env.Sluice.PromoterV1alpha1().PromotionStrategies(s.Namespace).Get(ctx, strategy, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range ps.Status.Environments {
			if e.Branch == branch {
				last = e
				return cond(e), nil
			}
		}
		return false, nil
	})
	if err != nil {
		return last, fmt.Errorf("environment %s of %s: %w (last status: active dry %q, blocked %q)", branch, strategy, err, last.Active.DrySHA, last.Blocked)
	}
	return last, nil
}

// gitHost is where the chapter's repository lives: served by the demo over HTTP (plain git, the
// default), or on a local Gitea with SCM=gitea.
type gitHost struct {
	url       string
	auth      git.Auth
	manifests string
	close     func()
	// pulls shows the pull requests on the SCM, when there is one.
	pulls func(context.Context) error
}

func promotionHost(ctx context.Context, s *Story) (*gitHost, error) {
	if os.Getenv("SCM") == "gitea" {
		return giteaPromotionHost(ctx, s)
	}
	s.Step("the demo serves a git repository over HTTP and acts as the hydrator")
	root, err := os.MkdirTemp("", "sluice-demo-git-")
	if err != nil {
		return nil, err
	}
	srv := gittest.StartServer(root)
	url, err := srv.InitRepo("app")
	if err != nil {
		srv.Close()
		os.RemoveAll(root)
		return nil, err
	}
	return &gitHost{
		url: url,
		close: func() {
			srv.Close()
			os.RemoveAll(root)
		},
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
  name: app`, url),
	}, nil
}

func giteaPromotionHost(ctx context.Context, s *Story) (*gitHost, error) {
	s.Step("SCM=gitea: a local Gitea holds the repository; pull requests are opened and merged there")
	srv, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return nil, err
	}
	url, err := srv.CreateRepo(ctx, "web-deploy")
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
	s.Say("Gitea %s; its token is in Secret gitea-promoter (not shown)", srv.URL)
	return &gitHost{
		url:   url,
		auth:  git.Auth{Username: srv.AdminUser, Password: srv.Token},
		close: func() { _ = srv.Close() },
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
  name: web-deploy
  auth: {type: basic, secretRef: {name: gitea-promoter}}`, srv.URL, url, srv.AdminUser),
		pulls: func(ctx context.Context) error {
			var prs []struct {
				Number int64  `json:"number"`
				Title  string `json:"title"`
				Merged bool   `json:"merged"`
				URL    string `json:"html_url"`
			}
			if err := srv.API(ctx, "GET", "/repos/"+srv.AdminUser+"/web-deploy/pulls?state=all", nil, &prs); err != nil {
				return err
			}
			for _, p := range prs {
				s.Say("Gitea pull request #%d merged=%t %s  %s", p.Number, p.Merged, p.URL, p.Title)
			}
			return nil
		},
	}, nil
}

func shortOf(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
