package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// ciCheck is the CI check the chapter's strategy waits for: its context on Gitea, and the key
// the import gives it (KeyForName).
const (
	ciCheck = "ci/kubeconform"
	ciKey   = "ci-kubeconform"
)

// chapterCI: a CI check that runs on the SCM gates a promotion. A local Gitea (its binary is
// cached by `make testbin`) holds the repository; a CI system sets ci/kubeconform on the proposed
// hydrated commit through Gitea's API. Gitea's status webhook wakes the commitstatus-controller,
// which imports the check as a read-only CommitStatus; the strategy names its key in
// proposedCommitStatuses, so staging waits with the CI's message while it fails, and is promoted
// once it passes.
func chapterCI(ctx context.Context, s *Story) (err error) {
	s.Step("a local Gitea holds the repository, as a CI system's SCM would")
	started := time.Now()
	srv, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()
	s.Say("Gitea %s, started in %.1fs; it stops with the chapter", srv.URL, time.Since(started).Seconds())
	h, cleanup, err := ciRepository(ctx, srv)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := ciObjects(ctx, s, srv); err != nil {
		return err
	}

	d1, err := h.dryCommit(ctx, "1.1.0")
	if err != nil {
		return err
	}
	if err := h.propose(ctx, "staging", d1, "1.1.0"); err != nil {
		return err
	}
	s.Step("the hydrator proposes web 1.1.0 (dry %s) on staging-next; staging waits for CI", d1[:7])
	e, err := s.waitEnvironment(ctx, "web-ci", "staging", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Proposed.DrySHA == d1 && e.PullRequest != nil && e.PullRequest.URL != "" && strings.Contains(e.Blocked, ciKey)
	})
	if err != nil {
		return err
	}
	proposed := e.Proposed.HydratedSHA
	s.Say("pull request %s; blocked: %s", e.PullRequest.URL, e.Blocked)

	if err := ciRun(ctx, s, srv, proposed, "failure", "2 manifests fail kubeconform: Deployment web has no resources.limits"); err != nil {
		return err
	}
	if e, err = s.waitEnvironment(ctx, "web-ci", "staging", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return strings.Contains(e.Blocked, "2 manifests fail kubeconform")
	}); err != nil {
		return err
	}
	s.Say("staging waits, in CI's words: %s", e.Blocked)
	if _, err := s.Kubectl(ctx, "get", "commitstatuses", "-l", commitstatusv1alpha1.ImportedLabel+"=true", "-o",
		"custom-columns=NAME:.metadata.name,KEY:.metadata.labels.commitstatus\\.sluice\\.dev/key,SHA:.spec.sha,PHASE:.spec.phase,OWNER:.metadata.ownerReferences[0].name"); err != nil {
		return err
	}
	s.Say("the import is read-only and owned by the strategy; nothing is mirrored back to Gitea")

	if err := ciRun(ctx, s, srv, proposed, "success", "all manifests pass kubeconform"); err != nil {
		return err
	}
	if _, err := s.waitEnvironment(ctx, "web-ci", "staging", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == d1 }); err != nil {
		return err
	}
	s.Say("staging runs web 1.1.0: the pull request was merged on Gitea by the promoter-controller (chapter: %.1fs, Gitea's start included)", time.Since(started).Seconds())
	_, err = s.Kubectl(ctx, "get", "promotionstrategy/web-ci")
	return err
}

// ciRepository creates the repository on Gitea with web 1.0.0 on main and hydrated on staging.
func ciRepository(ctx context.Context, srv *gitea.Server) (*hydrator, func(), error) {
	url, err := srv.CreateRepo(ctx, "web-ci")
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-demo-ci-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	cache, err := git.NewCache(dir, nil)
	if err == nil {
		var repo *git.Repository
		if repo, err = cache.Open(url, git.Auth{Username: srv.AdminUser, Password: srv.Token}, git.Options{}); err == nil {
			h := &hydrator{repo: repo, app: "web"}
			var d0 string
			if d0, err = h.dryCommit(ctx, "1.0.0"); err == nil {
				if _, err = h.commit(ctx, "staging", d0, "1.0.0"); err == nil {
					return h, cleanup, nil
				}
			}
		}
	}
	cleanup()
	return nil, nil, err
}

// ciObjects creates the Secret, ScmProvider, ScmRepository and PromotionStrategy, and Gitea's
// status webhook to the commitstatus-controller.
func ciObjects(ctx context.Context, s *Story, srv *gitea.Server) error {
	if s.StatusWebhook == "" {
		return fmt.Errorf("the commitstatus-controller is not running (run `make build`)")
	}
	s.Step("the repository, and a strategy whose staging waits for the CI check %s on the proposed commit", ciCheck)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-ci", Namespace: s.Namespace},
		StringData: map[string]string{
			scmv1alpha1.SecretKeyToken: srv.Token, scmv1alpha1.SecretKeyWebhookSecret: "demo-hook-secret",
			scmv1alpha1.GitSecretKeyUsername: srv.AdminUser, scmv1alpha1.GitSecretKeyPassword: srv.Token,
		},
	}
	if _, err := s.Env.Kube.CoreV1().Secrets(s.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	s.Say("Secret gitea-ci holds Gitea's token and the webhook secret (not shown)")
	if err := s.Apply(ctx, fmt.Sprintf(`
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmProvider
metadata: {name: gitea-ci}
spec:
  type: gitea
  baseURL: %[1]s
  allowInsecureLoopbackHTTP: true
  secretRef: {name: gitea-ci}
---
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmRepository
metadata: {name: web-ci}
spec:
  url: %[1]s/%[2]s/web-ci.git
  allowInsecureLoopbackHTTP: true
  providerRef: {name: gitea-ci}
  owner: %[2]s
  name: web-ci
  auth: {type: basic, secretRef: {name: gitea-ci}}
---
apiVersion: promoter.sluice.dev/v1alpha1
kind: PromotionStrategy
metadata: {name: web-ci}
spec:
  repositoryRef: {name: web-ci}
  dryBranch: main
  interval: 5s
  proposedCommitStatuses:
    - key: %[3]s          # the Gitea check %[4]s, imported by the commitstatus-controller
  environments:
    - branch: staging`, srv.URL, srv.AdminUser, ciKey, ciCheck)); err != nil {
		return err
	}
	hook := fmt.Sprintf("http://%s/hooks/%s/gitea-ci", s.StatusWebhook, s.Namespace)
	if err := srv.API(ctx, http.MethodPost, "/repos/"+srv.AdminUser+"/web-ci/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"status"},
		"config": map[string]string{"url": hook, "content_type": "json", "secret": "demo-hook-secret"},
	}, nil); err != nil {
		return err
	}
	s.Say("Gitea delivers status events to the commitstatus-controller: %s", hook)
	return nil
}

// ciRun sets the CI check on sha through Gitea's API, as a CI system does, and waits for its
// import.
func ciRun(ctx context.Context, s *Story, srv *gitea.Server, sha, state, description string) error {
	s.Step("CI sets %s=%s on %s, through Gitea's API", ciCheck, state, sha[:7])
	path := fmt.Sprintf("/repos/%s/web-ci/statuses/%s", srv.AdminUser, sha)
	set := time.Now()
	if err := srv.API(ctx, http.MethodPost, path, map[string]any{
		"state": state, "context": ciCheck, "description": description, "target_url": "https://ci.example.com/web-ci/kubeconform",
	}, nil); err != nil {
		return err
	}
	s.Say("$ curl -X POST %s/api/v1%s -d '{\"state\":%q,\"context\":%q,\"description\":%q}'", srv.URL, path, state, ciCheck, description)
	err := testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		list, err := s.Env.Sluice.CommitstatusV1alpha1().CommitStatuses(s.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: commitstatusv1alpha1.ImportedLabel + "=true," + commitstatusv1alpha1.KeyLabel + "=" + ciKey,
		})
		if err != nil {
			return false, err
		}
		for _, cs := range list.Items {
			if cs.Spec.SHA == sha && string(cs.Spec.Phase) == state {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s=%s on %s was not imported: %w", ciCheck, state, sha[:7], err)
	}
	s.Say("imported %.1fs later, woken by Gitea's webhook", time.Since(set).Seconds())
	return nil
}
