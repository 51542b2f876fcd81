package gitlab

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

const (
	token = "glpat-TESTTOKEN0123456789"
	sha   = "1111111111111111111111111111111111111111"
	sha2  = "2222222222222222222222222222222222222222"
	// The project path is one escaped segment: group/sub/app.
	api = "/api/v4/projects/{project}"
)

var repo = scm.Repository{Owner: "group/sub", Name: "app"}

const escapedProject = "/api/v4/projects/group%2Fsub%2Fapp"

func newFake(t *testing.T) (*scmtest.Server, *Provider) {
	t.Helper()
	srv := scmtest.NewTLSServer(t)
	p, err := NewProvider(srv.ProviderConfig(t, scm.Credentials{Token: token, WebhookSecret: []byte("hook-token")}))
	require.NoError(t, err)
	return srv, p
}

// project checks that the handler was reached for the right project.
func forProject(t *testing.T, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if got := r.PathValue("project"); got != "group/sub/app" {
			t.Errorf("project path segment = %q", got)
		}
		next(w, r)
	}
}

func glError(w http.ResponseWriter, status int, message any) {
	scmtest.WriteJSON(w, status, map[string]any{"message": message})
}

func mrJSON(iid int, state, headSHA string) map[string]any {
	mr := map[string]any{
		"id": 9000 + iid, "iid": iid, "project_id": 3, "title": "Promote to staging", "description": "dry 1a2b",
		"state": state, "source_branch": "env/staging-next", "target_branch": "env/staging", "sha": headSHA,
		"web_url": fmt.Sprintf("https://gitlab.example.com/group/sub/app/-/merge_requests/%d", iid),
	}
	if state == "merged" {
		mr["merge_commit_sha"] = "3333333333333333333333333333333333333333"
	}
	return mr
}

func TestSetAndGetCommitStatus(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", forProject(t, func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusCreated, map[string]any{
			"id": 77, "sha": sha, "status": "failed", "name": "sluice/health", "description": "degraded", "target_url": "https://d.example.com",
		})
	}))
	srv.Mux.HandleFunc("GET "+api+"/repository/commits/{sha}/statuses", forProject(t, func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, []map[string]any{
			{"id": 76, "status": "success", "name": "sluice/health"},
			{"id": 77, "status": "failed", "name": "sluice/health", "description": "degraded", "target_url": "https://d.example.com"},
		})
	}))
	c := context.Background()
	st, err := p.SetCommitStatus(c, repo, scm.CommitStatus{
		SHA: sha, Name: "sluice/health", State: scm.StatusFailure, Description: "degraded", TargetURL: "https://d.example.com",
	})
	require.NoError(t, err)
	assert.Equal(t, "77", st.ProviderID)

	got, err := p.GetCommitStatus(c, repo, sha, "sluice/health")
	require.NoError(t, err)
	assert.Equal(t, &scm.CommitStatus{SHA: sha, Name: "sluice/health", State: scm.StatusFailure,
		Description: "degraded", TargetURL: "https://d.example.com", ProviderID: "77"}, got)

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, escapedProject+"/statuses/"+sha, reqs[0].Path)
	assert.Equal(t, token, reqs[0].Header.Get("PRIVATE-TOKEN"))
	assert.Equal(t, map[string]any{"state": "failed", "name": "sluice/health", "description": "degraded",
		"target_url": "https://d.example.com"}, reqs[0].JSON(t))
	assert.Equal(t, escapedProject+"/repository/commits/"+sha+"/statuses", reqs[1].Path)
	assert.Equal(t, "name=sluice%2Fhealth&per_page=100", reqs[1].Query)
}

func TestSettingTheSameStateTwiceIsNotAnError(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", func(w http.ResponseWriter, _ *http.Request) {
		glError(w, http.StatusBadRequest, "Cannot transition status via :enqueue from :pending")
	})
	srv.Mux.HandleFunc("GET "+api+"/repository/commits/{sha}/statuses", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, []map[string]any{{"id": 5, "status": "pending", "name": "ci"}})
	})
	got, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending})
	require.NoError(t, err)
	assert.Equal(t, "5", got.ProviderID)

	_, err = p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending, Description: "other"})
	require.Error(t, err, "a different description is not what GitLab holds, so the 400 stands")
	assert.Equal(t, scm.KindInvalid, scm.KindOf(err))
}

func TestErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		kind    scm.Kind
		message string
	}{
		{"401", func(w http.ResponseWriter, _ *http.Request) { glError(w, http.StatusUnauthorized, "401 Unauthorized") }, scm.KindUnauthorized, "check the token"},
		{"404", func(w http.ResponseWriter, _ *http.Request) { glError(w, http.StatusNotFound, "404 Project Not Found") }, scm.KindNotFound, "owner and name"},
		{"422", func(w http.ResponseWriter, _ *http.Request) {
			glError(w, http.StatusUnprocessableEntity, map[string]any{"target_url": []string{"is blocked: Only allowed schemes are http, https"}})
		}, scm.KindInvalid, "Only allowed schemes"},
		{"429", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("RateLimit-Limit", "2000")
			w.Header().Set("RateLimit-Remaining", "0")
			w.Header().Set("RateLimit-Reset", fmt.Sprint(time.Now().Add(10*time.Minute).Unix()))
			w.Header().Set("Retry-After", "600")
			glError(w, http.StatusTooManyRequests, "Retry later")
		}, scm.KindRateLimited, "retry after 10m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := newFake(t)
			srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", tc.handler)
			_, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusSuccess})
			require.Error(t, err)
			assert.Equal(t, tc.kind, scm.KindOf(err))
			assert.Contains(t, err.Error(), tc.message)
			assert.NotContains(t, err.Error(), token)
			assert.Len(t, srv.Requests(), 1, "the SDK's own retries are off; Sluice's transport decides")
		})
	}
}

func TestMergeRequestLifecycle(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("POST "+api+"/merge_requests", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusCreated, mrJSON(4, "opened", sha))
	})
	srv.Mux.HandleFunc("GET "+api+"/merge_requests", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, []any{mrJSON(4, "opened", sha)})
	})
	srv.Mux.HandleFunc("PUT "+api+"/merge_requests/4", func(w http.ResponseWriter, r *http.Request) {
		state := "opened"
		if strings.Contains(string(body(r)), `"close"`) {
			state = "closed"
		}
		scmtest.WriteJSON(w, http.StatusOK, mrJSON(4, state, sha))
	})
	srv.Mux.HandleFunc("PUT "+api+"/merge_requests/4/merge", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, mrJSON(4, "merged", sha))
	})
	c := context.Background()

	created, err := p.CreatePullRequest(c, repo, scm.NewPullRequest{Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next", Base: "env/staging"})
	require.NoError(t, err)
	assert.Equal(t, &scm.PullRequest{Number: 4, Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next",
		Base: "env/staging", HeadSHA: sha, State: scm.PullRequestOpen, URL: "https://gitlab.example.com/group/sub/app/-/merge_requests/4"}, created)

	found, err := p.FindOpenPullRequest(c, repo, "env/staging-next", "env/staging")
	require.NoError(t, err)
	require.NotNil(t, found)
	assert.Equal(t, int64(4), found.Number)

	_, err = p.UpdatePullRequest(c, repo, 4, "Promote 1a2b", "body")
	require.NoError(t, err)
	res, err := p.MergePullRequest(c, repo, 4, scm.MergeOptions{ExpectedHeadSHA: sha})
	require.NoError(t, err)
	assert.Equal(t, "3333333333333333333333333333333333333333", res.MergeCommitSHA)
	require.NoError(t, p.ClosePullRequest(c, repo, 4))

	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, map[string]any{"title": "Promote to staging", "description": "dry 1a2b",
		"source_branch": "env/staging-next", "target_branch": "env/staging"}, reqs[0].JSON(t))
	assert.Equal(t, "per_page=10&source_branch=env%2Fstaging-next&state=opened&target_branch=env%2Fstaging", reqs[1].Query)
	assert.Equal(t, map[string]any{"title": "Promote 1a2b", "description": "body"}, reqs[2].JSON(t))
	assert.Equal(t, escapedProject+"/merge_requests/4/merge", reqs[3].Path)
	assert.Equal(t, map[string]any{"sha": sha}, reqs[3].JSON(t))
	assert.Equal(t, map[string]any{"state_event": "close"}, reqs[4].JSON(t))
}

func body(r *http.Request) []byte {
	b := make([]byte, r.ContentLength)
	_, _ = r.Body.Read(b)
	return b
}

func TestMergeGuardsTheExpectedHead(t *testing.T) {
	c := context.Background()
	t.Run("409 means the source branch moved", func(t *testing.T) {
		srv, p := newFake(t)
		srv.Mux.HandleFunc("PUT "+api+"/merge_requests/4/merge", func(w http.ResponseWriter, _ *http.Request) {
			glError(w, http.StatusConflict, "SHA does not match HEAD of source branch: "+sha2)
		})
		_, err := p.MergePullRequest(c, repo, 4, scm.MergeOptions{ExpectedHeadSHA: sha})
		assert.True(t, scm.IsHeadMoved(err), "%v", err)
		assert.Len(t, srv.Requests(), 1)
	})
	t.Run("405 after an earlier successful merge", func(t *testing.T) {
		srv, p := newFake(t)
		srv.Mux.HandleFunc("PUT "+api+"/merge_requests/4/merge", func(w http.ResponseWriter, _ *http.Request) {
			glError(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
		})
		srv.Mux.HandleFunc("GET "+api+"/merge_requests/4", func(w http.ResponseWriter, _ *http.Request) {
			scmtest.WriteJSON(w, http.StatusOK, mrJSON(4, "merged", sha))
		})
		res, err := p.MergePullRequest(c, repo, 4, scm.MergeOptions{ExpectedHeadSHA: sha})
		require.NoError(t, err)
		assert.True(t, res.AlreadyMerged)
	})
	t.Run("406 with conflicts", func(t *testing.T) {
		srv, p := newFake(t)
		srv.Mux.HandleFunc("PUT "+api+"/merge_requests/4/merge", func(w http.ResponseWriter, _ *http.Request) {
			glError(w, http.StatusNotAcceptable, "Branch cannot be merged")
		})
		srv.Mux.HandleFunc("GET "+api+"/merge_requests/4", func(w http.ResponseWriter, _ *http.Request) {
			scmtest.WriteJSON(w, http.StatusOK, mrJSON(4, "opened", sha))
		})
		_, err := p.MergePullRequest(c, repo, 4, scm.MergeOptions{ExpectedHeadSHA: sha})
		assert.True(t, scm.IsNotMergeable(err), "%v", err)
		assert.Contains(t, err.Error(), "Branch cannot be merged")
	})
}

func TestNewNeedsATokenAndHTTPS(t *testing.T) {
	_, err := NewProvider(scm.Config{Key: "a/b"})
	require.ErrorContains(t, err, "no token")
	_, err = NewProvider(scm.Config{Key: "a/b", BaseURL: "http://gitlab.internal", Credentials: scm.Credentials{Token: token}})
	require.ErrorContains(t, err, "use https")
}

const pushHook = `{"object_kind":"push","event_name":"push","before":"1111111111111111111111111111111111111111",
"after":"2222222222222222222222222222222222222222","ref":"refs/heads/env/prod","user_username":"jsmith",
"project":{"id":15,"name":"app","path_with_namespace":"group/sub/app"},"commits":[],"total_commits_count":0}`

const mergeRequestHook = `{"object_kind":"merge_request","event_type":"merge_request",
"project":{"id":1,"path_with_namespace":"group/sub/app"},
"object_attributes":{"iid":4,"title":"Promote","description":"d","state":"merged","action":"merge",
"source_branch":"env/prod-next","target_branch":"env/prod","url":"https://gitlab.example.com/group/sub/app/-/merge_requests/4",
"merge_commit_sha":"3333333333333333333333333333333333333333","last_commit":{"id":"1111111111111111111111111111111111111111"}}}`

func hookRequest(event, payload, tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hooks/gitlab", strings.NewReader(payload))
	r.Header.Set(EventHeader, event)
	if tok != "" {
		r.Header.Set(TokenHeader, tok)
	}
	return r
}

func TestWebhooks(t *testing.T) {
	_, p := newFake(t)
	ev, err := scm.ReceiveWebhook(p, hookRequest("Push Hook", pushHook, "hook-token"), 0)
	require.NoError(t, err)
	assert.Equal(t, scm.EventPush, ev.Kind)
	assert.Equal(t, repo, ev.Repository)
	assert.Equal(t, &scm.PushEvent{Ref: "refs/heads/env/prod", Branch: "env/prod", Before: sha, After: sha2}, ev.Push)

	ev, err = scm.ReceiveWebhook(p, hookRequest("Merge Request Hook", mergeRequestHook, "hook-token"), 0)
	require.NoError(t, err)
	require.NotNil(t, ev.PullRequest)
	assert.Equal(t, scm.ActionMerged, ev.PullRequest.Action)
	assert.Equal(t, scm.PullRequestMerged, ev.PullRequest.PullRequest.State)
	assert.Equal(t, int64(4), ev.PullRequest.PullRequest.Number)
	assert.Equal(t, sha, ev.PullRequest.PullRequest.HeadSHA)

	for name, tok := range map[string]string{"missing": "", "wrong": "guess", "prefix": "hook-toke"} {
		t.Run(name, func(t *testing.T) {
			_, err := scm.ReceiveWebhook(p, hookRequest("Push Hook", pushHook, tok), 0)
			assert.ErrorIs(t, err, webhook.ErrBadSignature)
		})
	}
	assert.ErrorIs(t, verifyWebhook(nil, hookRequest("Push Hook", pushHook, "x").Header), webhook.ErrNoSecret)

	_, err = scm.ReceiveWebhook(p, hookRequest("Push Hook", pushHook+strings.Repeat(" ", 2048), "hook-token"), 1024)
	assert.ErrorIs(t, err, webhook.ErrTooLarge)
}

func FuzzParseWebhook(f *testing.F) {
	f.Add("Push Hook", []byte(pushHook))
	f.Add("Merge Request Hook", []byte(mergeRequestHook))
	f.Add("Push Hook", []byte(`{"object_kind":"push"}`))
	f.Add("Merge Request Hook", []byte(`{"object_kind":"merge_request","object_attributes":{"iid":"x"}}`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := parseWebhook(event, body)
		if err != nil {
			require.Nil(t, ev)
			return
		}
		switch ev.Kind {
		case scm.EventPush:
			require.NotNil(t, ev.Push)
			require.NotEmpty(t, ev.Push.Ref)
		case scm.EventPullRequest:
			require.NotNil(t, ev.PullRequest)
			require.Positive(t, ev.PullRequest.PullRequest.Number)
		}
	})
}
