package github

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

const pushPayload = `{
  "ref": "refs/heads/env/staging",
  "before": "1111111111111111111111111111111111111111",
  "after": "2222222222222222222222222222222222222222",
  "created": false, "deleted": false, "forced": false,
  "repository": {"id": 1, "name": "app", "full_name": "acme/app", "owner": {"login": "acme", "id": 2}},
  "pusher": {"name": "octocat"}
}`

const pullRequestPayload = `{
  "action": "closed",
  "number": 7,
  "pull_request": {
    "number": 7, "state": "closed", "title": "Promote", "body": "b", "merged": true,
    "merge_commit_sha": "3333333333333333333333333333333333333333",
    "html_url": "https://github.com/acme/app/pull/7",
    "head": {"ref": "env/staging-next", "sha": "1111111111111111111111111111111111111111"},
    "base": {"ref": "env/staging", "sha": "2222222222222222222222222222222222222222"}
  },
  "repository": {"name": "app", "full_name": "acme/app", "owner": {"login": "acme"}}
}`

func signedRequest(event, body string, secret []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hooks/github", strings.NewReader(body))
	r.Header.Set(EventHeader, event)
	if secret != nil {
		r.Header.Set(SignatureHeader, "sha256="+webhook.SignHMACSHA256(secret, []byte(body)))
	}
	return r
}

func TestReceiveWebhookVerifiesThenParses(t *testing.T) {
	_, p := newFake(t)
	secret := []byte("hook-secret")

	ev, err := scm.ReceiveWebhook(p, signedRequest("push", pushPayload, secret), 0)
	require.NoError(t, err)
	assert.Equal(t, &scm.Event{
		Kind: scm.EventPush, Provider: Name, Type: "push", Repository: repo,
		Push: &scm.PushEvent{Ref: "refs/heads/env/staging", Branch: "env/staging", Before: sha, After: sha2},
	}, ev)

	ev, err = scm.ReceiveWebhook(p, signedRequest("pull_request", pullRequestPayload, secret), 0)
	require.NoError(t, err)
	require.NotNil(t, ev.PullRequest)
	assert.Equal(t, scm.ActionMerged, ev.PullRequest.Action)
	assert.Equal(t, scm.PullRequest{
		Number: 7, Title: "Promote", Body: "b", Head: "env/staging-next", Base: "env/staging", HeadSHA: sha,
		State: scm.PullRequestMerged, URL: "https://github.com/acme/app/pull/7", MergeCommitSHA: "3333333333333333333333333333333333333333",
	}, ev.PullRequest.PullRequest)

	ev, err = scm.ReceiveWebhook(p, signedRequest("issues", `{"action":"opened"}`, secret), 0)
	require.NoError(t, err)
	assert.Equal(t, scm.EventIgnored, ev.Kind)
}

func TestReceiveWebhookRefusesBadDeliveries(t *testing.T) {
	_, p := newFake(t)
	for name, r := range map[string]*http.Request{
		"unsigned":     signedRequest("push", pushPayload, nil),
		"wrong secret": signedRequest("push", pushPayload, []byte("guess")),
		"tampered": func() *http.Request {
			r := signedRequest("push", pushPayload, []byte("hook-secret"))
			r.Body = io.NopCloser(strings.NewReader(pushPayload + " "))
			return r
		}(),
		"sha1 signature": func() *http.Request {
			r := signedRequest("push", pushPayload, nil)
			r.Header.Set("X-Hub-Signature", "sha1=abc")
			return r
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := scm.ReceiveWebhook(p, r, 0)
			assert.ErrorIs(t, err, webhook.ErrBadSignature)
		})
	}
	t.Run("too large", func(t *testing.T) {
		big := `{"ref":"refs/heads/main","pad":"` + strings.Repeat("x", 2048) + `"}`
		_, err := scm.ReceiveWebhook(p, signedRequest("push", big, []byte("hook-secret")), 1024)
		assert.ErrorIs(t, err, webhook.ErrTooLarge)
	})
	t.Run("no secret configured", func(t *testing.T) {
		err := verifyWebhook(nil, signedRequest("push", pushPayload, []byte("x")).Header, []byte(pushPayload))
		assert.ErrorIs(t, err, webhook.ErrNoSecret)
	})
}

func FuzzParseWebhook(f *testing.F) {
	for _, seed := range []struct{ event, body string }{
		{"push", pushPayload},
		{"pull_request", pullRequestPayload},
		{"ping", `{"zen":"Keep it logically awesome.","repository":{"full_name":"acme/app"}}`},
		{"push", `{"ref":`},
		{"pull_request", `{"number":-1}`},
		{"push", `[]`},
	} {
		f.Add(seed.event, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := parseWebhook(event, body)
		if err != nil {
			require.Nil(t, ev)
			return
		}
		require.NotNil(t, ev)
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
