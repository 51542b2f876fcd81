package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
)

const (
	token = "ghp_0123456789abcdefTESTTOKEN"
	sha   = "1111111111111111111111111111111111111111"
	sha2  = "2222222222222222222222222222222222222222"
	api   = "/api/v3/repos/acme/app"
)

var repo = scm.Repository{Owner: "acme", Name: "app"}

// newFake starts a fake GitHub Enterprise Server and a token-authenticated provider for it.
func newFake(t *testing.T) (*scmtest.Server, *Provider) {
	t.Helper()
	srv := scmtest.NewTLSServer(t)
	p, err := NewProvider(srv.ProviderConfig(t, scm.Credentials{Token: token, WebhookSecret: []byte("hook-secret")}))
	require.NoError(t, err)
	return srv, p
}

func ghError(w http.ResponseWriter, status int, message string) {
	scmtest.WriteJSON(w, status, map[string]any{
		"message":           message,
		"documentation_url": "https://docs.github.com/rest",
	})
}

func pullJSON(number int, state string, merged bool, headSHA string) map[string]any {
	pr := map[string]any{
		"id":       1000 + number,
		"number":   number,
		"state":    state,
		"title":    "Promote to staging",
		"body":     "dry 1a2b",
		"html_url": fmt.Sprintf("https://github.example.com/acme/app/pull/%d", number),
		"merged":   merged,
		"head":     map[string]any{"ref": "env/staging-next", "sha": headSHA, "label": "acme:env/staging-next"},
		"base":     map[string]any{"ref": "env/staging", "sha": sha2, "label": "acme:env/staging"},
	}
	if merged {
		pr["merged_at"] = "2026-01-02T03:04:05Z"
		pr["merge_commit_sha"] = "3333333333333333333333333333333333333333"
	}
	return pr
}

func TestSetCommitStatusSendsTheDocumentedRequest(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", func(w http.ResponseWriter, r *http.Request) {
		scmtest.WriteJSON(w, http.StatusCreated, map[string]any{
			"id": 987, "state": "success", "context": "sluice/health", "description": "healthy", "target_url": "https://dash.example.com",
		})
	})

	long := strings.Repeat("é", 200)
	got, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{
		SHA: sha, Name: "sluice/health", State: scm.StatusSuccess, Description: long, TargetURL: "https://dash.example.com",
	})
	require.NoError(t, err)
	assert.Equal(t, "987", got.ProviderID)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, http.MethodPost, reqs[0].Method)
	assert.Equal(t, api+"/statuses/"+sha, reqs[0].Path)
	assert.Equal(t, "Bearer "+token, reqs[0].Header.Get("Authorization"))
	body := reqs[0].JSON(t)
	assert.Equal(t, "success", body["state"])
	assert.Equal(t, "sluice/health", body["context"])
	assert.Equal(t, "https://dash.example.com", body["target_url"])
	assert.Equal(t, 140, len([]rune(body["description"].(string))), "GitHub refuses descriptions over 140 characters")
}

func TestGetCommitStatusReadsTheCombinedStatus(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/status", func(w http.ResponseWriter, r *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{
			"state": "failure", "sha": sha, "total_count": 2,
			"statuses": []map[string]any{
				{"id": 1, "state": "success", "context": "ci/build"},
				{"id": 2, "state": "error", "context": "sluice/health", "description": "degraded", "target_url": "https://x.example.com"},
			},
		})
	})
	got, err := p.GetCommitStatus(context.Background(), repo, sha, "sluice/health")
	require.NoError(t, err)
	assert.Equal(t, &scm.CommitStatus{
		SHA: sha, Name: "sluice/health", State: scm.StatusFailure, Description: "degraded", TargetURL: "https://x.example.com", ProviderID: "2",
	}, got)

	missing, err := p.GetCommitStatus(context.Background(), repo, sha, "nobody/sets/this")
	require.NoError(t, err)
	assert.Nil(t, missing)

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, api+"/commits/"+sha+"/status", reqs[0].Path)
	assert.Equal(t, "per_page=100", reqs[0].Query)
}

func TestErrorsAreClassifiedWithActionableMessages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		kind    scm.Kind
		message string
	}{
		{"401", func(w http.ResponseWriter, _ *http.Request) {
			ghError(w, http.StatusUnauthorized, "Bad credentials: "+token)
		}, scm.KindUnauthorized, "check the token"},
		{"404", func(w http.ResponseWriter, _ *http.Request) { ghError(w, http.StatusNotFound, "Not Found") }, scm.KindNotFound, "owner and name"},
		{"422", func(w http.ResponseWriter, _ *http.Request) {
			scmtest.WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{
				"message": "Validation Failed",
				"errors":  []map[string]any{{"resource": "Status", "field": "target_url", "code": "custom", "message": "target_url is invalid"}},
			})
		}, scm.KindInvalid, "target_url is invalid"},
		{"429 with a long Retry-After", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "3600")
			ghError(w, http.StatusTooManyRequests, "You have exceeded a secondary rate limit")
		}, scm.KindRateLimited, "retry after 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := newFake(t)
			srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", tc.handler)
			_, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending})
			require.Error(t, err)
			assert.Equal(t, tc.kind, scm.KindOf(err))
			assert.Contains(t, err.Error(), tc.message)
			assert.NotContains(t, err.Error(), token)
			assert.Len(t, srv.Requests(), 1, "permanent errors and long pauses are not retried")
		})
	}
}

func TestRateLimitedCallsWaitThenStopReachingGitHub(t *testing.T) {
	srv, p := newFake(t)
	var calls atomic.Int64
	srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			ghError(w, http.StatusTooManyRequests, "slow down")
			return
		}
		scmtest.WriteJSON(w, http.StatusCreated, map[string]any{"id": 5, "state": "pending", "context": "ci"})
	})
	got, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending})
	require.NoError(t, err, "a short Retry-After is waited out and the request sent again")
	assert.Equal(t, "5", got.ProviderID)
	assert.Equal(t, int64(2), calls.Load())
	assert.Equal(t, int64(1), p.Limiter().Throttled())

	// Once GitHub reports the hourly quota spent, nothing more is sent until it resets.
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", fmt.Sprint(time.Now().Add(40*time.Minute).Unix()))
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{"state": "pending", "sha": sha, "statuses": []any{}})
	})
	_, err = p.GetCommitStatus(context.Background(), repo, sha, "ci")
	require.NoError(t, err)
	assert.Equal(t, int64(0), p.Limiter().Quota().Remaining)
	before := len(srv.Requests())
	_, err = p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusSuccess})
	require.Error(t, err)
	assert.True(t, scm.IsRateLimited(err))
	wait, ok := scm.RetryAfter(err)
	require.True(t, ok)
	assert.Greater(t, wait, 30*time.Minute)
	assert.Len(t, srv.Requests(), before, "no request is sent while the quota is spent")
}

func TestUntrustedCertificateIsRefused(t *testing.T) {
	srv := scmtest.NewTLSServer(t)
	p, err := NewProvider(scm.Config{
		Key: "test/untrusted", BaseURL: srv.URL, Credentials: scm.Credentials{Token: token}, Limiters: ratelimit.NewRegistry(),
	})
	require.NoError(t, err)
	_, err = p.GetPullRequest(context.Background(), repo, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
	assert.Empty(t, srv.Requests())
}

func TestNewRefusesMissingCredentialsAndPlainHTTP(t *testing.T) {
	_, err := NewProvider(scm.Config{Key: "x/y"})
	require.ErrorContains(t, err, "no credentials")
	_, err = NewProvider(scm.Config{Key: "x/y", BaseURL: "http://ghe.example.com", Credentials: scm.Credentials{Token: token}})
	require.ErrorContains(t, err, "use https")
	_, err = NewProvider(scm.Config{Key: "x/y", Credentials: scm.Credentials{GitHubApp: &scm.GitHubAppCredentials{
		AppID: 1, InstallationID: 2, PrivateKeyPEM: []byte("not a key"),
	}}})
	require.ErrorContains(t, err, "not a PEM-encoded RSA key")
}

func TestPullRequestLifecycle(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("POST "+api+"/pulls", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusCreated, pullJSON(7, "open", false, sha))
	})
	srv.Mux.HandleFunc("GET "+api+"/pulls", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("base") == "env/none" {
			scmtest.WriteJSON(w, http.StatusOK, []any{})
			return
		}
		scmtest.WriteJSON(w, http.StatusOK, []any{pullJSON(7, "open", false, sha)})
	})
	srv.Mux.HandleFunc("PATCH "+api+"/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		pr := pullJSON(7, "open", false, sha)
		if strings.Contains(string(mustBody(r)), `"closed"`) {
			pr["state"] = "closed"
		}
		scmtest.WriteJSON(w, http.StatusOK, pr)
	})
	srv.Mux.HandleFunc("PUT "+api+"/pulls/7/merge", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{"sha": "3333333333333333333333333333333333333333", "merged": true, "message": "Pull Request successfully merged"})
	})
	c := context.Background()

	created, err := p.CreatePullRequest(c, repo, scm.NewPullRequest{Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next", Base: "env/staging"})
	require.NoError(t, err)
	assert.Equal(t, &scm.PullRequest{
		Number: 7, Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next", Base: "env/staging",
		HeadSHA: sha, State: scm.PullRequestOpen, URL: "https://github.example.com/acme/app/pull/7",
	}, created)

	found, err := p.FindOpenPullRequest(c, repo, "env/staging-next", "env/staging")
	require.NoError(t, err)
	require.NotNil(t, found)
	assert.Equal(t, int64(7), found.Number)
	none, err := p.FindOpenPullRequest(c, repo, "env/staging-next", "env/none")
	require.NoError(t, err)
	assert.Nil(t, none)

	_, err = p.UpdatePullRequest(c, repo, 7, "Promote 1a2b to staging", "new body")
	require.NoError(t, err)

	merged, err := p.MergePullRequest(c, repo, 7, scm.MergeOptions{ExpectedHeadSHA: sha, Method: scm.MergeMethodSquash})
	require.NoError(t, err)
	assert.Equal(t, &scm.MergeResult{MergeCommitSHA: "3333333333333333333333333333333333333333"}, merged)

	require.NoError(t, p.ClosePullRequest(c, repo, 7))

	reqs := srv.Requests()
	require.Len(t, reqs, 6)
	assert.Equal(t, map[string]any{"title": "Promote to staging", "head": "env/staging-next", "base": "env/staging", "body": "dry 1a2b"}, reqs[0].JSON(t))
	assert.Equal(t, "base=env%2Fstaging&head=acme%3Aenv%2Fstaging-next&per_page=10&state=open", reqs[1].Query)
	assert.Equal(t, http.MethodPatch, reqs[3].Method)
	assert.Equal(t, map[string]any{"title": "Promote 1a2b to staging", "body": "new body"}, reqs[3].JSON(t))
	assert.Equal(t, api+"/pulls/7/merge", reqs[4].Path)
	assert.Equal(t, map[string]any{"sha": sha, "merge_method": "squash"}, reqs[4].JSON(t))
	assert.Equal(t, map[string]any{"state": "closed"}, reqs[5].JSON(t))
}

func mustBody(r *http.Request) []byte {
	b := make([]byte, r.ContentLength)
	_, _ = r.Body.Read(b)
	return b
}

func TestMergeGuardsTheExpectedHead(t *testing.T) {
	c := context.Background()
	t.Run("409 means the head moved", func(t *testing.T) {
		srv, p := newFake(t)
		srv.Mux.HandleFunc("PUT "+api+"/pulls/7/merge", func(w http.ResponseWriter, _ *http.Request) {
			ghError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.")
		})
		_, err := p.MergePullRequest(c, repo, 7, scm.MergeOptions{ExpectedHeadSHA: sha})
		require.Error(t, err)
		assert.True(t, scm.IsHeadMoved(err))
		assert.Len(t, srv.Requests(), 1)
	})
	t.Run("405 on a pull request already merged at the expected head is success", func(t *testing.T) {
		srv, p := newFake(t)
		srv.Mux.HandleFunc("PUT "+api+"/pulls/7/merge", func(w http.ResponseWriter, _ *http.Request) {
			ghError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		})
		srv.Mux.HandleFunc("GET "+api+"/pulls/7", func(w http.ResponseWriter, _ *http.Request) {
			scmtest.WriteJSON(w, http.StatusOK, pullJSON(7, "closed", true, sha))
		})
		res, err := p.MergePullRequest(c, repo, 7, scm.MergeOptions{ExpectedHeadSHA: sha})
		require.NoError(t, err)
		assert.True(t, res.AlreadyMerged)
		assert.Len(t, srv.Requests(), 2, "one merge attempt and one read, no retry")
	})
	t.Run("405 on an open pull request is not mergeable", func(t *testing.T) {
		srv, p := newFake(t)
		srv.Mux.HandleFunc("PUT "+api+"/pulls/7/merge", func(w http.ResponseWriter, _ *http.Request) {
			ghError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		})
		srv.Mux.HandleFunc("GET "+api+"/pulls/7", func(w http.ResponseWriter, _ *http.Request) {
			scmtest.WriteJSON(w, http.StatusOK, pullJSON(7, "open", false, sha))
		})
		_, err := p.MergePullRequest(c, repo, 7, scm.MergeOptions{ExpectedHeadSHA: sha})
		require.Error(t, err)
		assert.True(t, scm.IsNotMergeable(err))
		assert.Contains(t, err.Error(), "Pull Request is not mergeable")
	})
	t.Run("no expected head, no request", func(t *testing.T) {
		srv, p := newFake(t)
		_, err := p.MergePullRequest(c, repo, 7, scm.MergeOptions{})
		require.Error(t, err)
		assert.True(t, scm.IsPermanent(err))
		assert.Empty(t, srv.Requests())
	})
}

// An App signs a JWT with its key, trades it for an installation token, and writes check runs.
func TestGitHubAppWritesCheckRuns(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})

	srv := scmtest.NewTLSServer(t)
	var exchanges atomic.Int64
	srv.Mux.HandleFunc("POST /api/v3/app/installations/42/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		exchanges.Add(1)
		raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}))
		if err != nil || claims.Issuer != "1234" {
			ghError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
			return
		}
		scmtest.WriteJSON(w, http.StatusCreated, map[string]any{
			"token": "ghs_installationtoken123", "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	})
	srv.Mux.HandleFunc("POST "+api+"/check-runs", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ghs_installationtoken123" {
			ghError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		scmtest.WriteJSON(w, http.StatusCreated, map[string]any{"id": 555, "name": "sluice/health", "head_sha": sha, "status": "in_progress"})
	})
	srv.Mux.HandleFunc("PATCH "+api+"/check-runs/555", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{"id": 555, "name": "sluice/health", "status": "completed", "conclusion": "success"})
	})
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/check-runs", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{"total_count": 2, "check_runs": []map[string]any{
			{"id": 554, "name": "sluice/health", "status": "completed", "conclusion": "failure"},
			{"id": 555, "name": "sluice/health", "status": "completed", "conclusion": "success", "details_url": "https://d.example.com",
				"output": map[string]any{"title": "sluice/health", "summary": "all good"}},
		}})
	})

	p, err := NewProvider(scm.Config{
		Key: "test/app", BaseURL: srv.URL, CABundle: srv.CAPEM, Limiters: ratelimit.NewRegistry(),
		Credentials: scm.Credentials{GitHubApp: &scm.GitHubAppCredentials{AppID: 1234, InstallationID: 42, PrivateKeyPEM: keyPEM}},
	})
	require.NoError(t, err)
	assert.True(t, p.Capabilities().ChecksAPI)
	c := context.Background()

	pending, err := p.SetCommitStatus(c, repo, scm.CommitStatus{SHA: sha, Name: "sluice/health", State: scm.StatusPending, Description: "checking"})
	require.NoError(t, err)
	assert.Equal(t, "555", pending.ProviderID)

	pending.State, pending.Description = scm.StatusSuccess, "all good"
	done, err := p.SetCommitStatus(c, repo, pending)
	require.NoError(t, err)
	assert.Equal(t, "555", done.ProviderID)

	got, err := p.GetCommitStatus(c, repo, sha, "sluice/health")
	require.NoError(t, err)
	assert.Equal(t, &scm.CommitStatus{SHA: sha, Name: "sluice/health", State: scm.StatusSuccess, Description: "all good",
		TargetURL: "https://d.example.com", ProviderID: "555"}, got)

	assert.Equal(t, int64(1), exchanges.Load(), "the installation token is cached")
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	create := reqs[1].JSON(t)
	assert.Equal(t, map[string]any{"name": "sluice/health", "head_sha": sha, "status": "in_progress",
		"output": map[string]any{"title": "sluice/health", "summary": "checking"}}, create)
	update := reqs[2].JSON(t)
	assert.Equal(t, "completed", update["status"])
	assert.Equal(t, "success", update["conclusion"])
	assert.NotEmpty(t, update["completed_at"])
	assert.Equal(t, "check_name=sluice%2Fhealth&filter=latest&per_page=100", reqs[3].Query)
}

func TestGitHubAppWithARevokedKeyIsUnauthorized(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	srv := scmtest.NewTLSServer(t)
	srv.Mux.HandleFunc("POST /api/v3/app/installations/42/access_tokens", func(w http.ResponseWriter, _ *http.Request) {
		ghError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
	})
	p, err := NewProvider(scm.Config{
		Key: "test/revoked", BaseURL: srv.URL, CABundle: srv.CAPEM, Limiters: ratelimit.NewRegistry(),
		Credentials: scm.Credentials{GitHubApp: &scm.GitHubAppCredentials{AppID: 1234, InstallationID: 42, PrivateKeyPEM: keyPEM}},
	})
	require.NoError(t, err)
	_, err = p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending})
	require.Error(t, err)
	assert.Equal(t, scm.KindUnauthorized, scm.KindOf(err))
	assert.True(t, scm.IsPermanent(err))
	assert.Contains(t, err.Error(), "installation token")
	assert.NotContains(t, err.Error(), "PRIVATE KEY")
}

// A secondary rate limit can come as a 403 without Retry-After; it must not be taken for a
// permission problem (which would stall the object), and it pauses every caller.
func TestSecondaryRateLimitWithoutRetryAfterIsNotForbidden(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4000")
		scmtest.WriteJSON(w, http.StatusForbidden, map[string]any{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
	})
	_, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending})
	require.Error(t, err)
	assert.True(t, scm.IsRateLimited(err), "%v", err)
	assert.False(t, scm.IsPermanent(err))
	wait, ok := scm.RetryAfter(err)
	require.True(t, ok)
	assert.Equal(t, time.Minute, wait)
	assert.False(t, p.Limiter().PausedUntil().IsZero(), "other callers are paused too")

	_, err = p.GetCommitStatus(context.Background(), repo, sha, "ci")
	assert.True(t, scm.IsRateLimited(err))
	assert.Len(t, srv.Requests(), 1, "nothing is sent during the pause")
}
