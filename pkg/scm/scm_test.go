package scm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
)

func TestValidateBaseURL(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		allowHTTP bool
		wantErr   string
	}{
		{raw: "https://gitea.example.com"},
		{raw: "https://ghe.example.com/api/v3/"},
		{raw: "http://127.0.0.1:3000", allowHTTP: true},
		{raw: "http://127.5.6.7:3000", allowHTTP: true},
		{raw: "http://localhost:3000", allowHTTP: true},
		{raw: "http://[::1]:3000", allowHTTP: true},
		{raw: "http://127.0.0.1:3000", wantErr: "uses http: use https"},
		{raw: "http://gitea.example.com", allowHTTP: true, wantErr: "not loopback"},
		{raw: "http://10.0.0.1", allowHTTP: true, wantErr: "not loopback"},
		{raw: "ftp://gitea.example.com", wantErr: `scheme "ftp"`},
		{raw: "gitea.example.com", wantErr: "not an absolute URL"},
		{raw: "https://user:hunter2@gitea.example.com", wantErr: "must not contain credentials"},
		{raw: "https://gitea.example.com/?private_token=abc", wantErr: "query or a fragment"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			_, err := scm.ValidateBaseURL(tc.raw, tc.allowHTTP)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			assert.NotContains(t, err.Error(), "hunter2")
			assert.NotContains(t, err.Error(), "private_token=abc")
		})
	}
}

func TestRedactorHidesSecretsURLsAndAuthorizationValues(t *testing.T) {
	r := scm.NewRedactor("ghp_supersecrettoken", "whsec-123456")
	in := `Post "https://x-access-token:ghp_other@github.example.com/api/v3/repos?access_token=abc123&page=2": ` +
		`bad token ghp_supersecrettoken; header Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig; webhook whsec-123456`
	out := r.String(in)
	for _, secret := range []string{"ghp_supersecrettoken", "ghp_other", "abc123", "eyJhbGciOiJSUzI1NiJ9", "whsec-123456"} {
		assert.NotContains(t, out, secret)
	}
	assert.Contains(t, out, "github.example.com/api/v3/repos", "the useful part of the URL stays")
	assert.Contains(t, out, "page=2")
}

func TestRedactURL(t *testing.T) {
	u, err := url.Parse("https://oauth2:glpat-abcdef@gitlab.example.com/api/v4/projects?private_token=glpat-abcdef&per_page=20")
	require.NoError(t, err)
	out := scm.RedactURL(u)
	assert.NotContains(t, out, "glpat-abcdef")
	assert.Contains(t, out, "per_page=20")
	assert.Contains(t, out, "gitlab.example.com/api/v4/projects")
}

func TestCredentialsNeverPrint(t *testing.T) {
	c := scm.Credentials{
		Token:         "ghp_supersecrettoken",
		WebhookSecret: []byte("whsec-123456"),
		GitHubApp:     &scm.GitHubAppCredentials{AppID: 1, InstallationID: 2, PrivateKeyPEM: []byte("-----BEGIN RSA PRIVATE KEY-----")},
	}
	cfg := scm.Config{Key: "ns/p", Credentials: c}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, cfg)
		assert.NotContains(t, out, "ghp_supersecrettoken", format)
		assert.NotContains(t, out, "whsec-123456", format)
		assert.NotContains(t, out, "PRIVATE KEY", format)
	}
}

func response(code int, headers ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return &http.Response{StatusCode: code, Header: h}
}

func TestClassify(t *testing.T) {
	redactor := scm.NewRedactor("ghp_supersecrettoken")
	reset := time.Now().Add(90 * time.Second).Unix()
	for _, tc := range []struct {
		name       string
		f          scm.Failure
		kind       scm.Kind
		permanent  bool
		retryAfter bool
		message    string
	}{
		{"401", scm.Failure{Response: response(401), ServerMessage: "Bad credentials"}, scm.KindUnauthorized, true, false, "check the token"},
		{"403 permission", scm.Failure{Response: response(403, "X-RateLimit-Remaining", "4999"), ServerMessage: "Resource not accessible by integration"}, scm.KindForbidden, true, false, "lack permission"},
		{"403 primary rate limit", scm.Failure{Response: response(403, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", fmt.Sprint(reset))}, scm.KindRateLimited, false, true, "rate limited"},
		{"403 secondary rate limit", scm.Failure{Response: response(403, "Retry-After", "60")}, scm.KindRateLimited, false, true, "retry after 1m0s"},
		{"404", scm.Failure{Response: response(404), ServerMessage: "Not Found"}, scm.KindNotFound, true, false, "owner and name"},
		{"422", scm.Failure{Response: response(422), ServerMessage: "Validation Failed: sha"}, scm.KindInvalid, true, false, "Validation Failed"},
		{"400", scm.Failure{Response: response(400)}, scm.KindInvalid, true, false, "invalid (400)"},
		{"409", scm.Failure{Response: response(409)}, scm.KindConflict, false, false, "conflict"},
		{"429", scm.Failure{Response: response(429, "Retry-After", "7")}, scm.KindRateLimited, false, true, "retry after 7s"},
		{"502", scm.Failure{Response: response(502)}, scm.KindTransient, false, false, "will retry"},
		{"network", scm.Failure{Err: errors.New(`dial tcp: lookup ghp_supersecrettoken.example: no such host`)}, scm.KindTransient, false, false, "could not reach"},
		{"timeout", scm.Failure{Err: context.DeadlineExceeded}, scm.KindTransient, false, false, "timed out"},
		{"paused limiter", scm.Failure{Err: &url.Error{Op: "Post", URL: "https://x", Err: &ratelimit.PausedError{RetryAfter: time.Minute, Reason: "test"}}}, scm.KindRateLimited, false, true, "no request was sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Provider, tc.f.Op = "github", "set commit status on acme/app"
			err := error(scm.Classify(tc.f, redactor))
			wrapped := fmt.Errorf("reconciling: %w", err)
			assert.Equal(t, tc.kind, scm.KindOf(wrapped))
			assert.Equal(t, tc.permanent, scm.IsPermanent(wrapped))
			_, hasRetryAfter := scm.RetryAfter(wrapped)
			assert.Equal(t, tc.retryAfter, hasRetryAfter)
			assert.Contains(t, err.Error(), tc.message)
			assert.True(t, strings.HasPrefix(err.Error(), "github: set commit status on acme/app: "), err.Error())
			assert.NotContains(t, err.Error(), "ghp_supersecrettoken")
		})
	}
}

func TestUnsupportedIsPermanentAndSaysWhy(t *testing.T) {
	err := scm.Unsupported("git", "set commit status", "the CommitStatus object is the status")
	assert.True(t, scm.IsUnsupported(err))
	assert.True(t, scm.IsPermanent(err))
	assert.Contains(t, err.Error(), "not supported by plain git; handled in-cluster")
}

func TestRegistry(t *testing.T) {
	var built []scm.Config
	factory := func(cfg scm.Config) (scm.Provider, error) {
		built = append(built, cfg)
		return nil, errors.New("test factory")
	}
	require.NoError(t, scm.Register("registry-test", factory))
	require.ErrorContains(t, scm.Register("registry-test", factory), "already registered")
	require.Error(t, scm.Register("", factory))
	require.Error(t, scm.Register("registry-test-nil", nil))
	assert.Contains(t, scm.Registered(), "registry-test")

	_, err := scm.New("registry-test", scm.Config{Key: "ns/name"})
	require.ErrorContains(t, err, "test factory")
	require.Len(t, built, 1)
	assert.Equal(t, "ns/name", built[0].Key)

	_, err = scm.New("no-such-scm", scm.Config{})
	require.ErrorContains(t, err, `no provider named "no-such-scm"`)
}

func TestHTTPClientVerifiesTLSAndTrustsTheCABundle(t *testing.T) {
	srv := scmtest.NewTLSServer(t)
	srv.Mux.HandleFunc("/ping", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	get := func(cfg scm.Config) error {
		c, err := cfg.NewHTTPClient(ratelimit.Limits{})
		if err != nil {
			return err
		}
		resp, err := c.Get(srv.URL + "/ping")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}

	err := get(scm.Config{Key: "ns/untrusted", BaseURL: srv.URL, Limiters: ratelimit.NewRegistry()})
	require.Error(t, err, "a self-signed server is refused without a CA bundle")
	assert.Contains(t, err.Error(), "certificate")

	require.NoError(t, get(scm.Config{Key: "ns/trusted", BaseURL: srv.URL, CABundle: srv.CAPEM, Limiters: ratelimit.NewRegistry()}))

	err = get(scm.Config{Key: "ns/bad-bundle", BaseURL: srv.URL, CABundle: []byte("not pem"), Limiters: ratelimit.NewRegistry()})
	require.ErrorContains(t, err, "no PEM certificate")

	insecure := &http.Transport{}
	insecure.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	insecure.TLSClientConfig.InsecureSkipVerify = true
	err = get(scm.Config{Key: "ns/insecure", BaseURL: srv.URL, Transport: insecure, Limiters: ratelimit.NewRegistry()})
	require.ErrorContains(t, err, "cannot be turned off")
}

func TestHTTPClientSharesOneLimiterPerKey(t *testing.T) {
	reg := ratelimit.NewRegistry()
	a, err := scm.Config{Key: "ns/github", Limiters: reg}.NewHTTPClient(ratelimit.Limits{QPS: 1, Burst: 1})
	require.NoError(t, err)
	b, err := scm.Config{Key: "ns/github", Limiters: reg}.NewHTTPClient(ratelimit.Limits{QPS: 1, Burst: 1})
	require.NoError(t, err)
	assert.Same(t, a.Limiter, b.Limiter)

	_, err = scm.Config{Limiters: reg}.NewHTTPClient(ratelimit.Limits{})
	require.ErrorContains(t, err, "no Key")
}

func TestHTTPClientRefusesRedirectsThatLeaveHTTPS(t *testing.T) {
	srv := scmtest.NewTLSServer(t)
	srv.Mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://scm.example.com/elsewhere", http.StatusFound)
	})
	c, err := scm.Config{Key: "ns/redirect", BaseURL: srv.URL, CABundle: srv.CAPEM, Limiters: ratelimit.NewRegistry()}.NewHTTPClient(ratelimit.Limits{})
	require.NoError(t, err)
	_, err = c.Get(srv.URL + "/moved")
	require.ErrorContains(t, err, "leaves https")
}

func TestValidationHelpers(t *testing.T) {
	require.NoError(t, scm.Repository{Owner: "group/sub", Name: "app.git-ops"}.Validate())
	require.Error(t, scm.Repository{Owner: "", Name: "app"}.Validate())
	require.Error(t, scm.Repository{Owner: "acme", Name: "a/b"}.Validate())
	require.Error(t, scm.Repository{Owner: "..", Name: "app"}.Validate())

	require.NoError(t, scm.ValidateSHA(strings.Repeat("a", 40)))
	require.NoError(t, scm.ValidateSHA(strings.Repeat("b", 64)))
	require.Error(t, scm.ValidateSHA("abc1234"))
	require.Error(t, scm.ValidateSHA(strings.Repeat("A", 40)))

	require.Error(t, scm.MergeOptions{}.Validate(), "a merge without the expected head is refused")
	require.Error(t, scm.MergeOptions{ExpectedHeadSHA: strings.Repeat("a", 40), Method: "octopus"}.Validate())
	require.NoError(t, scm.MergeOptions{ExpectedHeadSHA: strings.Repeat("a", 40), Method: scm.MergeMethodSquash}.Validate())

	require.Error(t, scm.NewPullRequest{Title: "x", Head: "main", Base: "main"}.Validate())
	require.Error(t, scm.CommitStatus{SHA: strings.Repeat("a", 40), Name: "ci", State: "queued"}.Validate())
}

func TestBranchFromRefAndZeroSHA(t *testing.T) {
	assert.Equal(t, "env/prod", scm.BranchFromRef("refs/heads/env/prod"))
	assert.Equal(t, "", scm.BranchFromRef("refs/tags/v1"))
	assert.True(t, scm.ZeroSHA(strings.Repeat("0", 40)))
	assert.False(t, scm.ZeroSHA(""))
	assert.False(t, scm.ZeroSHA("0000001"+strings.Repeat("0", 33)))
}
