package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/commitstatus"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// giteaStatus is a commit status as Gitea's API returns it.
type giteaStatus struct {
	ID          int64  `json:"id"`
	State       string `json:"status"`
	Context     string `json:"context"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
}

// giteaStatuses lists every status of sha, read straight from Gitea's API.
func giteaStatuses(t *testing.T, srv *giteatest.Server, repo, sha string) []giteaStatus {
	t.Helper()
	var out []giteaStatus
	require.NoError(t, srv.API(context.Background(), http.MethodGet,
		fmt.Sprintf("/repos/%s/%s/commits/%s/statuses?limit=50", srv.AdminUser, repo, sha), nil, &out))
	return out
}

func latestGiteaStatus(t *testing.T, srv *giteatest.Server, repo, sha, context string) *giteaStatus {
	t.Helper()
	var latest *giteaStatus
	for _, s := range giteaStatuses(t, srv, repo, sha) {
		if s.Context == context && (latest == nil || s.ID > latest.ID) {
			latest = &s
		}
	}
	return latest
}

func mainHead(t *testing.T, srv *giteatest.Server, repo string) string {
	t.Helper()
	var out struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	require.NoError(t, srv.API(context.Background(), http.MethodGet, fmt.Sprintf("/repos/%s/%s/branches/main", srv.AdminUser, repo), nil, &out))
	require.Len(t, out.Commit.ID, 40)
	return out.Commit.ID
}

// A CommitStatus reaches a real Gitea; a phase change updates it; broken credentials stall with
// a message that says what to fix.
func TestCommitStatusesReachARealGitea(t *testing.T) {
	testenv.SkipIfShort(t)
	srv := giteatest.StartForTest(t)
	ctx := context.Background()
	cloneURL, err := srv.CreateRepo(ctx, "app", giteatest.AutoInit())
	require.NoError(t, err)
	head := mainHead(t, srv, "app")

	ns := newNamespace(t)
	createSecret(t, ns, "gitea-token", map[string]string{"token": srv.Token})
	gitea := func(name, secret string) *scmv1alpha1.ScmProvider {
		return &scmv1alpha1.ScmProvider{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: scmv1alpha1.ScmProviderSpec{
				Type: scmv1alpha1.ScmProviderGitea, BaseURL: srv.URL, AllowInsecureLoopbackHTTP: true,
				SecretRef: &scmv1alpha1.LocalObjectReference{Name: secret},
			},
		}
	}
	createProvider(t, ns, gitea("gitea", "gitea-token"))
	createRepository(t, ns, "app", "gitea", srv.AdminUser, "app", cloneURL)
	startController(t, controllerOptions{})

	t.Run("a CommitStatus becomes a Gitea status", func(t *testing.T) {
		createCommitStatus(t, newCommitStatus(ns, "health", "app", head, commitstatusv1alpha1.CommitStatusPending))
		cs := waitFor(t, ns, "health", synced(commitstatusv1alpha1.CommitStatusPending))
		got := latestGiteaStatus(t, srv, "app", head, "sluice/health")
		require.NotNil(t, got, "Gitea holds the status")
		assert.Equal(t, "pending", got.State)
		assert.Equal(t, "healthy in staging", got.Description)
		assert.Equal(t, "https://dash.example.com/staging", got.TargetURL)
		assert.Equal(t, fmt.Sprint(got.ID), cs.Status.ProviderID)
		assert.Equal(t, head, cs.Status.SyncedSHA)
	})

	t.Run("changing the phase updates it", func(t *testing.T) {
		updateCommitStatus(t, ns, "health", func(cs *commitstatusv1alpha1.CommitStatus) {
			cs.Spec.Phase = commitstatusv1alpha1.CommitStatusSuccess
			cs.Spec.Description = "all 3 replicas ready"
		})
		waitFor(t, ns, "health", synced(commitstatusv1alpha1.CommitStatusSuccess))
		got := latestGiteaStatus(t, srv, "app", head, "sluice/health")
		require.NotNil(t, got)
		assert.Equal(t, "success", got.State)
		assert.Equal(t, "all 3 replicas ready", got.Description)
		assert.Len(t, giteaStatuses(t, srv, "app", head), 2, "one status per change, none repeated")
	})

	t.Run("a Secret without a token stalls", func(t *testing.T) {
		createSecret(t, ns, "no-token", map[string]string{"password": "not-what-is-needed"})
		createProvider(t, ns, gitea("broken", "no-token"))
		createRepository(t, ns, "broken", "broken", srv.AdminUser, "app", cloneURL)
		createCommitStatus(t, newCommitStatus(ns, "broken", "broken", head, commitstatusv1alpha1.CommitStatusSuccess))
		cs := waitFor(t, ns, "broken", stalled(resolve.ReasonSecretInvalid))
		msg := conditions.Get(cs.Status.Conditions, conditions.Stalled).Message
		assert.Contains(t, msg, `secret "no-token" has no key token`)
		assert.Contains(t, msg, "put an API access token for the gitea server there")
		assert.NotContains(t, msg, "not-what-is-needed")
	})

	t.Run("a revoked token stalls with what to do", func(t *testing.T) {
		createSecret(t, ns, "bad-token", map[string]string{"token": "0000000000000000000000000000000000000000"})
		createProvider(t, ns, gitea("revoked", "bad-token"))
		createRepository(t, ns, "revoked", "revoked", srv.AdminUser, "app", cloneURL)
		createCommitStatus(t, newCommitStatus(ns, "revoked", "revoked", head, commitstatusv1alpha1.CommitStatusSuccess))
		cs := waitFor(t, ns, "revoked", stalled(commitstatus.ReasonUnauthorized))
		msg := conditions.Get(cs.Status.Conditions, conditions.Stalled).Message
		assert.Contains(t, msg, `ScmProvider "`+ns+`/revoked"`)
		assert.Contains(t, msg, "check the token")
		assert.NotContains(t, msg, "0000000000000000000000000000000000000000")

		// Fixing the Secret is noticed by the periodic re-check, without any other change.
		s, err := env.Kube.CoreV1().Secrets(ns).Get(ctx, "bad-token", metav1.GetOptions{})
		require.NoError(t, err)
		s.Data["token"] = []byte(srv.Token)
		_, err = env.Kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err)
		waitFor(t, ns, "revoked", synced(commitstatusv1alpha1.CommitStatusSuccess))
	})
}
