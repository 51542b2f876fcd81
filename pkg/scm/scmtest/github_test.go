package scmtest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/github"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
)

const (
	token = "ghp_fake_github_token_0123"
	sha   = "2222222222222222222222222222222222222222"
)

func provider(t *testing.T, srv *scmtest.GitHub, tok string) scm.Provider {
	t.Helper()
	cfg := srv.ProviderConfig(t, scm.Credentials{Token: tok})
	cfg.MaxWait = time.Millisecond
	p, err := github.New(cfg)
	require.NoError(t, err)
	return p
}

// The fake answers the real provider the way GitHub documents it.
func TestFakeGitHubKeepsStatusesAndRefusesLikeGitHub(t *testing.T) {
	srv := scmtest.NewGitHub(t, token)
	srv.AddRepo("acme", "app")
	p := provider(t, srv, token)
	repo := scm.Repository{Owner: "acme", Name: "app"}
	ctx := context.Background()

	_, err := p.SetCommitStatus(ctx, repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending})
	require.NoError(t, err)
	set, err := p.SetCommitStatus(ctx, repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusSuccess, Description: "ok", TargetURL: "https://ci.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "2", set.ProviderID)

	got, err := p.GetCommitStatus(ctx, repo, sha, "ci")
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, scm.StatusSuccess, got.State, "the combined status holds the latest status of a context")
	assert.Equal(t, "ok", got.Description)
	assert.Len(t, srv.Statuses("acme", "app", sha), 2)
	assert.Equal(t, int64(2), srv.StatusPosts())

	_, err = provider(t, srv, "ghp_wrong_token_000").SetCommitStatus(ctx, repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusSuccess})
	assert.Equal(t, scm.KindUnauthorized, scm.KindOf(err))
	_, err = p.SetCommitStatus(ctx, scm.Repository{Owner: "acme", Name: "other"}, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusSuccess})
	assert.Equal(t, scm.KindNotFound, scm.KindOf(err))
}

func TestFakeGitHubQuotaAnswers429WithRetryAfter(t *testing.T) {
	srv := scmtest.NewGitHub(t, token)
	srv.AddRepo("acme", "app")
	srv.SetQuota(1, time.Minute)
	client := srv.Client()
	post := func() *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v3/repos/acme/app/statuses/"+sha, http.NoBody)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	first := post()
	assert.Equal(t, http.StatusBadRequest, first.StatusCode, "an empty body is not JSON")
	assert.Equal(t, "0", first.Header.Get("X-RateLimit-Remaining"))
	second := post()
	assert.Equal(t, http.StatusTooManyRequests, second.StatusCode)
	assert.NotEmpty(t, second.Header.Get("Retry-After"))
	assert.Equal(t, int64(1), srv.Throttled())
}
