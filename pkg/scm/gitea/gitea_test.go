package gitea

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

const (
	token = "gitea-TESTTOKEN-0123456789abcdef"
	sha   = "1111111111111111111111111111111111111111"
	sha2  = "2222222222222222222222222222222222222222"
	api   = "/api/v1/repos/acme/app"
)

var repo = scm.Repository{Owner: "acme", Name: "app"}

func newFake(t *testing.T, name string) (*scmtest.Server, *Provider) {
	t.Helper()
	srv := scmtest.NewTLSServer(t)
	p, err := NewProvider(name, srv.ProviderConfig(t, scm.Credentials{Token: token, WebhookSecret: []byte("hook-secret")}))
	require.NoError(t, err)
	return srv, p
}

func giteaError(w http.ResponseWriter, status int, message string) {
	scmtest.WriteJSON(w, status, map[string]any{"message": message, "url": "https://gitea.example.com/api/swagger"})
}

func pullJSON(number int, state string, merged bool, headSHA string) map[string]any {
	pr := map[string]any{
		"id": 100 + number, "number": number, "title": "Promote to staging", "body": "dry 1a2b", "state": state,
		"html_url": fmt.Sprintf("https://gitea.example.com/acme/app/pulls/%d", number), "merged": merged, "mergeable": true,
		"head": map[string]any{"label": "env/staging-next", "ref": "env/staging-next", "sha": headSHA, "repo_id": 1},
		"base": map[string]any{"label": "env/staging", "ref": "env/staging", "sha": sha2, "repo_id": 1},
	}
	if merged {
		pr["merge_commit_sha"] = "3333333333333333333333333333333333333333"
		pr["merged_at"] = "2026-01-02T03:04:05Z"
	}
	return pr
}

func TestCommitStatuses(t *testing.T) {
	srv, p := newFake(t, Name)
	srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusCreated, map[string]any{
			"id": 12, "status": "success", "context": "sluice/health", "description": "healthy", "target_url": "https://d.example.com",
		})
	})
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/status", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{
			"state": "success", "sha": sha, "total_count": 2,
			"statuses": []map[string]any{
				{"id": 11, "status": "warning", "context": "ci/lint"},
				{"id": 12, "status": "success", "context": "sluice/health", "description": "healthy", "target_url": "https://d.example.com"},
			},
		})
	})
	c := context.Background()
	st, err := p.SetCommitStatus(c, repo, scm.CommitStatus{SHA: sha, Name: "sluice/health", State: scm.StatusSuccess,
		Description: "healthy", TargetURL: "https://d.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "12", st.ProviderID)

	got, err := p.GetCommitStatus(c, repo, sha, "sluice/health")
	require.NoError(t, err)
	assert.Equal(t, &scm.CommitStatus{SHA: sha, Name: "sluice/health", State: scm.StatusSuccess, Description: "healthy",
		TargetURL: "https://d.example.com", ProviderID: "12"}, got)
	lint, err := p.GetCommitStatus(c, repo, sha, "ci/lint")
	require.NoError(t, err)
	assert.Equal(t, scm.StatusFailure, lint.State, "a Gitea warning is not a success")

	reqs := srv.Requests()
	require.Len(t, reqs, 3, "no server version probe")
	assert.Equal(t, api+"/statuses/"+sha, reqs[0].Path)
	assert.Equal(t, "token "+token, reqs[0].Header.Get("Authorization"))
	assert.Equal(t, map[string]any{"state": "success", "context": "sluice/health", "description": "healthy",
		"target_url": "https://d.example.com"}, reqs[0].JSON(t))
	assert.Equal(t, api+"/commits/"+sha+"/status", reqs[1].Path)
}

func TestErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		kind    scm.Kind
		message string
	}{
		{"401", func(w http.ResponseWriter, _ *http.Request) {
			giteaError(w, http.StatusUnauthorized, "user does not exist [uid: 0, name: ]")
		}, scm.KindUnauthorized, "check the token"},
		{"403", func(w http.ResponseWriter, _ *http.Request) {
			giteaError(w, http.StatusForbidden, "token does not have required scope")
		}, scm.KindForbidden, "required scope"},
		{"404", func(w http.ResponseWriter, _ *http.Request) {
			giteaError(w, http.StatusNotFound, "The target couldn't be found.")
		}, scm.KindNotFound, "owner and name"},
		{"422", func(w http.ResponseWriter, _ *http.Request) {
			giteaError(w, http.StatusUnprocessableEntity, "[TargetURL]: Invalid Url")
		}, scm.KindInvalid, "Invalid Url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := newFake(t, Name)
			srv.Mux.HandleFunc("POST "+api+"/statuses/{sha}", tc.handler)
			_, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusPending})
			require.Error(t, err)
			assert.Equal(t, tc.kind, scm.KindOf(err))
			assert.Contains(t, err.Error(), tc.message)
			assert.True(t, strings.HasPrefix(err.Error(), "gitea: set commit status"), err.Error())
			assert.Len(t, srv.Requests(), 1)
		})
	}
}

func TestServerErrorsOfReadsAreRetried(t *testing.T) {
	srv, p := newFake(t, Name)
	var calls atomic.Int64
	srv.Mux.HandleFunc("GET "+api+"/pulls/3", func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			giteaError(w, http.StatusBadGateway, "bad gateway")
			return
		}
		scmtest.WriteJSON(w, http.StatusOK, pullJSON(3, "open", false, sha))
	})
	pr, err := p.GetPullRequest(context.Background(), repo, 3)
	require.NoError(t, err)
	assert.Equal(t, int64(3), pr.Number)
	assert.Equal(t, int64(2), calls.Load())
}

func TestPullRequestLifecycle(t *testing.T) {
	srv, p := newFake(t, Name)
	merged := atomic.Bool{}
	srv.Mux.HandleFunc("POST "+api+"/pulls", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusCreated, pullJSON(3, "open", false, sha))
	})
	srv.Mux.HandleFunc("GET "+api+"/pulls", func(w http.ResponseWriter, _ *http.Request) {
		other := pullJSON(2, "open", false, sha2)
		other["head"].(map[string]any)["ref"] = "feature"
		scmtest.WriteJSON(w, http.StatusOK, []any{other, pullJSON(3, "open", false, sha)})
	})
	srv.Mux.HandleFunc("PATCH "+api+"/pulls/3", func(w http.ResponseWriter, r *http.Request) {
		state := "open"
		if strings.Contains(string(readAll(r)), `"state":"closed"`) {
			state = "closed"
		}
		scmtest.WriteJSON(w, http.StatusCreated, pullJSON(3, state, false, sha))
	})
	srv.Mux.HandleFunc("POST "+api+"/pulls/3/merge", func(w http.ResponseWriter, _ *http.Request) {
		merged.Store(true)
		w.WriteHeader(http.StatusOK)
	})
	srv.Mux.HandleFunc("GET "+api+"/pulls/3", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, pullJSON(3, "closed", merged.Load(), sha))
	})
	c := context.Background()

	created, err := p.CreatePullRequest(c, repo, scm.NewPullRequest{Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next", Base: "env/staging"})
	require.NoError(t, err)
	assert.Equal(t, &scm.PullRequest{Number: 3, Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next",
		Base: "env/staging", HeadSHA: sha, State: scm.PullRequestOpen, URL: "https://gitea.example.com/acme/app/pulls/3"}, created)

	found, err := p.FindOpenPullRequest(c, repo, "env/staging-next", "env/staging")
	require.NoError(t, err)
	require.NotNil(t, found)
	assert.Equal(t, int64(3), found.Number)

	_, err = p.UpdatePullRequest(c, repo, 3, "Promote 1a2b", "new body")
	require.NoError(t, err)

	res, err := p.MergePullRequest(c, repo, 3, scm.MergeOptions{ExpectedHeadSHA: sha, Method: scm.MergeMethodSquash})
	require.NoError(t, err)
	assert.Equal(t, &scm.MergeResult{MergeCommitSHA: "3333333333333333333333333333333333333333"}, res)
	base := "4444444444444444444444444444444444444444"
	_, err = p.MergePullRequest(c, repo, 3, scm.MergeOptions{ExpectedHeadSHA: sha, ExpectedBaseSHA: base})
	require.NoError(t, err)

	require.NoError(t, p.ClosePullRequest(c, repo, 3))

	reqs := srv.Requests()
	require.Len(t, reqs, 8)
	body := reqs[0].JSON(t)
	assert.Equal(t, "env/staging-next", body["head"])
	assert.Equal(t, "env/staging", body["base"])
	assert.Equal(t, "Promote to staging", body["title"])
	assert.Equal(t, "limit=50&page=1&state=open", reqs[1].Query)
	edit := reqs[2].JSON(t)
	assert.Equal(t, "Promote 1a2b", edit["title"])
	assert.Equal(t, "new body", edit["body"])
	assert.Nil(t, edit["state"], "an edit does not touch the state")
	merge := reqs[3].JSON(t)
	assert.Equal(t, sha, merge["head_commit_id"])
	assert.Equal(t, "squash", merge["Do"])
	assert.Equal(t, "fast-forward-only", reqs[5].JSON(t)["Do"], "an expected base is guarded by Gitea: fast-forward only")
	assert.Equal(t, "closed", reqs[7].JSON(t)["state"])
}

func readAll(r *http.Request) []byte {
	b := make([]byte, r.ContentLength)
	_, _ = r.Body.Read(b)
	return b
}

func TestMergeRefusalsAreExplained(t *testing.T) {
	c := context.Background()
	for _, tc := range []struct {
		name        string
		status      int
		current     map[string]any
		wantErr     func(error) bool
		wantAlready bool
	}{
		{"head moved", http.StatusConflict, pullJSON(3, "open", false, sha2), scm.IsHeadMoved, false},
		{"conflicts", http.StatusConflict, pullJSON(3, "open", false, sha), scm.IsNotMergeable, false},
		{"already merged", http.StatusMethodNotAllowed, pullJSON(3, "closed", true, sha), nil, true},
		{"closed", http.StatusNotFound, pullJSON(3, "closed", false, sha), scm.IsNotMergeable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := newFake(t, Name)
			srv.Mux.HandleFunc("POST "+api+"/pulls/3/merge", func(w http.ResponseWriter, _ *http.Request) {
				giteaError(w, tc.status, "refused")
			})
			srv.Mux.HandleFunc("GET "+api+"/pulls/3", func(w http.ResponseWriter, _ *http.Request) {
				scmtest.WriteJSON(w, http.StatusOK, tc.current)
			})
			res, err := p.MergePullRequest(c, repo, 3, scm.MergeOptions{ExpectedHeadSHA: sha})
			if tc.wantAlready {
				require.NoError(t, err)
				assert.True(t, res.AlreadyMerged)
			} else {
				require.Error(t, err)
				assert.True(t, tc.wantErr(err), "%v", err)
			}
			assert.Len(t, srv.Requests(), 2, "one merge, one read")
		})
	}
}

func TestMergeWhileGiteaIsStillCheckingIsTransient(t *testing.T) {
	srv, p := newFake(t, Name)
	srv.Mux.HandleFunc("POST "+api+"/pulls/3/merge", func(w http.ResponseWriter, _ *http.Request) {
		giteaError(w, http.StatusMethodNotAllowed, "Please try again later")
	})
	_, err := p.MergePullRequest(context.Background(), repo, 3, scm.MergeOptions{ExpectedHeadSHA: sha})
	require.Error(t, err)
	assert.Equal(t, scm.KindTransient, scm.KindOf(err))
	assert.Contains(t, err.Error(), "still checking")
	assert.Contains(t, err.Error(), "or it conflicts with its target branch")
	assert.Len(t, srv.Requests(), 1)
}

func TestNewNeedsBaseURLAndToken(t *testing.T) {
	_, err := NewProvider(Name, scm.Config{Key: "a/b", Credentials: scm.Credentials{Token: token}})
	require.ErrorContains(t, err, "baseURL is required")
	_, err = NewProvider(Name, scm.Config{Key: "a/b", BaseURL: "https://gitea.example.com"})
	require.ErrorContains(t, err, "no token")
	p, err := NewProvider(Name, scm.Config{Key: "a/b", BaseURL: "http://127.0.0.1:3000", AllowInsecureLoopbackHTTP: true,
		Credentials: scm.Credentials{Token: token}, Limiters: ratelimit.NewRegistry()})
	require.NoError(t, err, "loopback http is allowed when asked for")
	assert.Equal(t, "gitea", p.Type())
}

const pushPayload = `{"ref":"refs/heads/env/dev","before":"1111111111111111111111111111111111111111",
"after":"2222222222222222222222222222222222222222","compare_url":"","commits":[],
"repository":{"id":1,"name":"app","full_name":"acme/app","owner":{"id":1,"login":"acme","username":"acme"}},
"pusher":{"login":"bot"},"sender":{"login":"bot"}}`

const pullPayload = `{"action":"synchronized","number":3,"pull_request":{"id":103,"number":3,"title":"Promote","body":"",
"state":"open","merged":false,"html_url":"https://gitea.example.com/acme/app/pulls/3",
"head":{"ref":"env/dev-next","sha":"1111111111111111111111111111111111111111"},"base":{"ref":"env/dev","sha":"x"}},
"repository":{"name":"app","full_name":"acme/app","owner":{"login":"acme","username":"acme"}}}`

func hook(event, payload string, headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(payload))
	r.Header.Set(EventHeader, event)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return r
}

func TestWebhooks(t *testing.T) {
	secret := []byte("hook-secret")
	_, p := newFake(t, Name)
	ev, err := scm.ReceiveWebhook(p, hook("push", pushPayload, SignatureHeader, webhook.SignHMACSHA256(secret, []byte(pushPayload))), 0)
	require.NoError(t, err)
	assert.Equal(t, &scm.Event{Kind: scm.EventPush, Provider: Name, Type: "push", Repository: repo,
		Push: &scm.PushEvent{Ref: "refs/heads/env/dev", Branch: "env/dev", Before: sha, After: sha2}}, ev)

	ev, err = scm.ReceiveWebhook(p, hook("pull_request", pullPayload, SignatureHeader, webhook.SignHMACSHA256(secret, []byte(pullPayload))), 0)
	require.NoError(t, err)
	assert.Equal(t, scm.ActionSynchronized, ev.PullRequest.Action)
	assert.Equal(t, sha, ev.PullRequest.PullRequest.HeadSHA)

	_, err = scm.ReceiveWebhook(p, hook("push", pushPayload), 0)
	assert.ErrorIs(t, err, webhook.ErrBadSignature, "unsigned")
	_, err = scm.ReceiveWebhook(p, hook("push", pushPayload, SignatureHeader, "sha256="+webhook.SignHMACSHA256(secret, []byte(pushPayload))), 0)
	assert.ErrorIs(t, err, webhook.ErrBadSignature, "Gitea signatures carry no prefix")
	_, err = scm.ReceiveWebhook(p, hook("push", pushPayload, SignatureHeader, webhook.SignHMACSHA256([]byte("guess"), []byte(pushPayload))), 0)
	assert.ErrorIs(t, err, webhook.ErrBadSignature)
	big := pushPayload + strings.Repeat(" ", 4096)
	_, err = scm.ReceiveWebhook(p, hook("push", big, SignatureHeader, webhook.SignHMACSHA256(secret, []byte(big))), 1024)
	assert.ErrorIs(t, err, webhook.ErrTooLarge)

	t.Run("forgejo headers", func(t *testing.T) {
		_, fp := newFake(t, ForgejoName)
		r := hook("", pushPayload, ForgejoEventHeader, "push", ForgejoSignatureHeader, webhook.SignHMACSHA256(secret, []byte(pushPayload)))
		ev, err := scm.ReceiveWebhook(fp, r, 0)
		require.NoError(t, err)
		assert.Equal(t, scm.EventPush, ev.Kind)
		assert.Equal(t, ForgejoName, ev.Provider)
	})
}

func FuzzParseWebhook(f *testing.F) {
	f.Add("push", []byte(pushPayload))
	f.Add("pull_request", []byte(pullPayload))
	f.Add("pull_request", []byte(`{"number":0}`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := parseWebhook(Name, event, body)
		if err != nil {
			require.Nil(t, ev)
			return
		}
		switch ev.Kind {
		case scm.EventPush:
			require.NotEmpty(t, ev.Push.Ref)
		case scm.EventPullRequest:
			require.Positive(t, ev.PullRequest.PullRequest.Number)
		}
	})
}
