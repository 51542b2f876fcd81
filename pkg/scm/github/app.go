package github

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	gh "github.com/google/go-github/v75/github"

	"github.com/sluicehq/sluice/pkg/scm"
)

// GitHub accepts App JWTs valid for at most ten minutes, and tolerates little clock skew: the
// token is backdated a minute and lives nine.
const (
	jwtBackdate = time.Minute
	jwtLifetime = 9 * time.Minute
	// tokenRefreshMargin renews an installation token (valid one hour) this long before it expires.
	tokenRefreshMargin = 5 * time.Minute
)

// installationTokens mints App JWTs and caches the installation token they buy.
type installationTokens struct {
	appID          int64
	installationID int64
	key            *rsa.PrivateKey
	apps           *gh.Client
	now            func() time.Time
	// fail classifies a failed token exchange.
	fail func(op string, resp *gh.Response, err error) error

	mu      sync.Mutex
	token   string
	expires time.Time
}

func newInstallationTokens(app *scm.GitHubAppCredentials, apps *gh.Client, fail func(string, *gh.Response, error) error) (*installationTokens, error) {
	if app.AppID <= 0 || app.InstallationID <= 0 {
		return nil, errors.New("githubApp needs a positive appID and installationID")
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(app.PrivateKeyPEM)
	if err != nil {
		// The parser's message says nothing secret, but nothing useful either.
		return nil, errors.New("the GitHub App private key (Secret key githubAppPrivateKey) is not a PEM-encoded RSA key: " +
			"paste the .pem file GitHub generated for the App")
	}
	return &installationTokens{
		appID:          app.AppID,
		installationID: app.InstallationID,
		key:            key,
		apps:           apps,
		now:            time.Now,
		fail:           fail,
	}, nil
}

// appJWT signs a JWT that authenticates as the App itself.
func (t *installationTokens) appJWT() (string, error) {
	now := t.now()
	claims := jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(t.appID, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-jwtBackdate)),
		ExpiresAt: jwt.NewNumericDate(now.Add(jwtLifetime)),
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(t.key)
	if err != nil {
		return "", fmt.Errorf("signing the GitHub App JWT: %w", err)
	}
	return signed, nil
}

// installationToken returns a cached token, or exchanges a fresh JWT for a new one.
func (t *installationTokens) installationToken(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Add(tokenRefreshMargin).Before(t.expires) {
		return t.token, nil
	}
	tok, resp, err := t.apps.Apps.CreateInstallationToken(ctx, t.installationID, nil)
	if err != nil {
		return "", t.fail(fmt.Sprintf("create an installation token for GitHub App %d, installation %d",
			t.appID, t.installationID), resp, err)
	}
	if tok.GetToken() == "" {
		return "", scm.NewError(Name, "create an installation token", scm.KindTransient, 0,
			"GitHub answered without a token; will retry", nil)
	}
	t.token = tok.GetToken()
	t.expires = tok.GetExpiresAt().Time
	if t.expires.IsZero() {
		t.expires = t.now().Add(time.Hour)
	}
	return t.token, nil
}

// invalidate drops a token GitHub refused, so the next request fetches a new one.
func (t *installationTokens) invalidate(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == token {
		t.token = ""
	}
}

// jwtTransport authenticates App-level requests (token exchange) with a fresh JWT.
type jwtTransport struct {
	base   http.RoundTripper
	tokens *installationTokens
}

func (j *jwtTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	signed, err := j.tokens.appJWT()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+signed)
	return j.base.RoundTrip(r)
}

// installationTransport authenticates API requests with the installation token.
type installationTransport struct {
	base   http.RoundTripper
	tokens *installationTokens
}

func (i *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := i.tokens.installationToken(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := i.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		i.tokens.invalidate(token)
	}
	return resp, err
}
