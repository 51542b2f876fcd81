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

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// statusCommit is the commit the plain-git part of the chapter reports on. With plain git the
// controller never reads the repository, so the id only has to be a well-formed one.
const statusCommit = "3f786850e387550fdab836ed7e6dc881de23001b"

// chapterCommitStatuses: a CommitStatus on a plain git repository is Ready in the cluster, with
// nothing sent anywhere. With SCM=gitea, a local Gitea is started and a CommitStatus becomes a
// real status on a real commit, visible through Gitea's API, and follows a phase change.
func chapterCommitStatuses(ctx context.Context, s *Story) error {
	s.Step("plain git hosting has no SCM API: an ScmProvider of type git, and the repository on it")
	if err := s.Apply(ctx, `
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmProvider
metadata:
  name: plain
spec:
  type: git                      # no API, so no Secret either
---
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmRepository
metadata:
  name: app
spec:
  url: https://git.example.com/acme/app.git
  providerRef: {name: plain}
  owner: acme
  name: app
`); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "--for=condition=Ready", "scmprovider/plain", "scmrepo/app", "--timeout=60s"); err != nil {
		return err
	}
	s.Say("the commitstatus-controller checks both without calling any SCM, and fills their READY column")
	if _, err := s.Kubectl(ctx, "get", "scmproviders,scmrepo"); err != nil {
		return err
	}

	s.Step("a check reports on commit %s", statusCommit[:7])
	if err := s.Apply(ctx, fmt.Sprintf(`
apiVersion: commitstatus.sluice.dev/v1alpha1
kind: CommitStatus
metadata:
  name: lint-%s
  labels:
    commitstatus.sluice.dev/key: lint   # what promotions select statuses by
spec:
  repositoryRef: {name: app}
  sha: %s
  name: sluice/lint
  phase: success
  description: manifests pass kubeconform
`, statusCommit[:7], statusCommit)); err != nil {
		return err
	}
	name := "commitstatus/lint-" + statusCommit[:7]
	if _, err := s.Kubectl(ctx, "wait", "--for=condition=Ready", name, "--timeout=60s"); err != nil {
		return err
	}
	reason, err := s.Kubectl(ctx, "get", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}{"\n"}`)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(reason, "InCluster:") {
		return fmt.Errorf("the CommitStatus on plain git should be Ready in the cluster, got %q", reason)
	}
	s.Say("Ready, and nothing was sent: with plain git the object is the status, and promotions read it from the cluster")
	if _, err := s.Kubectl(ctx, "get", "commitstatuses"); err != nil {
		return err
	}

	if os.Getenv("SCM") != "gitea" {
		s.Say("run `make demo SCM=gitea` to see the same on a real Gitea, started locally")
		return nil
	}
	return commitStatusesOnGitea(ctx, s)
}

// commitStatusesOnGitea mirrors a CommitStatus to a Gitea started for the demo.
func commitStatusesOnGitea(ctx context.Context, s *Story) (err error) {
	s.Step("SCM=gitea: starting a local Gitea built from its Go module (the first run builds it, which takes minutes)")
	srv, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()
	s.Say("Gitea: %s (user %s); it stops with the demo", srv.URL, srv.AdminUser)
	cloneURL, err := srv.CreateRepo(ctx, "app", gitea.AutoInit())
	if err != nil {
		return err
	}
	head, err := giteaHead(ctx, srv, "app", "main")
	if err != nil {
		return err
	}
	s.Say("repository %s/app, with commit %s on main", srv.AdminUser, head[:7])

	if err := giteaRepository(ctx, s, srv, cloneURL); err != nil {
		return err
	}

	s.Step("staging's health check is still running on commit %s", head[:7])
	if err := s.Apply(ctx, fmt.Sprintf(`
apiVersion: commitstatus.sluice.dev/v1alpha1
kind: CommitStatus
metadata:
  name: health-staging
  labels:
    commitstatus.sluice.dev/key: health-staging
spec:
  repositoryRef: {name: app-on-gitea}
  sha: %s
  name: sluice/health-staging
  phase: pending
  description: rolling out in staging
`, head)); err != nil {
		return err
	}
	if err := waitGiteaStatus(ctx, s, srv, head, "pending"); err != nil {
		return err
	}

	s.Step("the rollout is healthy: the phase changes, and so does the status on Gitea")
	if _, err := s.Kubectl(ctx, "patch", "commitstatus/health-staging", "--type=merge",
		"-p", `{"spec":{"phase":"success","description":"healthy in staging"}}`); err != nil {
		return err
	}
	if err := waitGiteaStatus(ctx, s, srv, head, "success"); err != nil {
		return err
	}
	s.Say("the commit's page on Gitea shows it too: %s/%s/app/commit/%s", srv.URL, srv.AdminUser, head)
	_, err = s.Kubectl(ctx, "get", "commitstatuses")
	return err
}

// giteaRepository puts Gitea's API token in a Secret and creates the ScmProvider and the
// ScmRepository on Gitea.
func giteaRepository(ctx context.Context, s *Story, srv *gitea.Server, cloneURL string) error {
	s.Step("the Gitea API token goes into a Secret, which the controller reads by name (the value is not shown)")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-token", Namespace: s.Namespace},
		StringData: map[string]string{"token": srv.Token},
	}
	if _, err := s.Env.Kube.CoreV1().Secrets(s.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	return s.Apply(ctx, fmt.Sprintf(`
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmProvider
metadata:
  name: gitea
spec:
  type: gitea
  baseURL: %[1]s
  allowInsecureLoopbackHTTP: true   # plain http, accepted only for a loopback host
  secretRef: {name: gitea-token}
---
apiVersion: scm.sluice.dev/v1alpha1
kind: ScmRepository
metadata:
  name: app-on-gitea
spec:
  url: %[2]s
  allowInsecureLoopbackHTTP: true
  providerRef: {name: gitea}
  owner: %[3]s
  name: app
`, srv.URL, cloneURL, srv.AdminUser))
}

// waitGiteaStatus waits for the CommitStatus to be synced in phase, then reads the status back
// from Gitea's API and fails unless Gitea says the same.
func waitGiteaStatus(ctx context.Context, s *Story, srv *gitea.Server, sha, phase string) error {
	if _, err := s.Kubectl(ctx, "wait", "commitstatus/health-staging", "--timeout=60s",
		"--for=jsonpath={.status.syncedPhase}="+phase); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "wait", "commitstatus/health-staging", "--for=condition=Ready", "--timeout=60s"); err != nil {
		return err
	}
	path := fmt.Sprintf("/repos/%s/app/commits/%s/status", srv.AdminUser, sha)
	var combined struct {
		Statuses []struct {
			State       string `json:"status"`
			Context     string `json:"context"`
			Description string `json:"description"`
		} `json:"statuses"`
	}
	err := testenv.Wait(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		if err := srv.API(ctx, http.MethodGet, path, nil, &combined); err != nil {
			return false, err
		}
		for _, st := range combined.Statuses {
			if st.Context == "sluice/health-staging" && st.State == phase {
				s.Say("$ curl %s/api/v1%s", srv.URL, path)
				s.Say("Gitea: %s %q: %s", st.Context, st.State, st.Description)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("no %s status sluice/health-staging on %s appeared on Gitea: %w", phase, sha[:7], err)
	}
	return nil
}

func giteaHead(ctx context.Context, srv *gitea.Server, repo, branch string) (string, error) {
	var out struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	if err := srv.API(ctx, http.MethodGet, fmt.Sprintf("/repos/%s/%s/branches/%s", srv.AdminUser, repo, branch), nil, &out); err != nil {
		return "", err
	}
	if len(out.Commit.ID) != 40 {
		return "", fmt.Errorf("gitea gave no head commit for %s/%s", repo, branch)
	}
	return out.Commit.ID, nil
}
