// Package github is the GitHub and GitHub Enterprise Server provider, registered as "github".
//
// It authenticates with a token, or as a GitHub App installation (JWT minted with the App's key,
// exchanged for short-lived installation tokens). As an App it writes commit statuses through the
// Checks API, which only Apps may use; with a token it uses the Statuses API.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v75/github"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// Name is the registered provider name.
const Name = "github"

// DefaultLimits keep a token under GitHub's 5,000 requests per hour with headroom for other
// clients of the same token: 1.25/s is 4,500 per hour.
var DefaultLimits = ratelimit.Limits{QPS: 1.25, Burst: 10}

func init() {
	scm.MustRegister(Name, New)
}

// Provider talks to one GitHub or GitHub Enterprise Server.
type Provider struct {
	client        *gh.Client
	checks        bool
	webhookSecret []byte
	redactor      *scm.Redactor
	limiter       *ratelimit.Limiter
}

var _ scm.Provider = (*Provider)(nil)

// New builds a provider. BaseURL empty (or https://api.github.com) means github.com; any other
// base URL is a GitHub Enterprise Server, whose /api/v3/ path is added when missing.
func New(cfg scm.Config) (scm.Provider, error) {
	return NewProvider(cfg)
}

// NewProvider is New with the concrete type.
func NewProvider(cfg scm.Config) (*Provider, error) {
	creds := cfg.Credentials
	if creds.GitHubApp == nil && creds.Token == "" {
		return nil, errors.New("github: no credentials: put a token under the key token, or set githubApp " +
			"and put the App's private key under githubAppPrivateKey in the ScmProvider's Secret")
	}
	hc, err := cfg.NewHTTPClient(DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	p := &Provider{
		webhookSecret: creds.WebhookSecret,
		redactor:      creds.Redactor(),
		limiter:       hc.Limiter,
	}

	newClient := func(httpClient *http.Client) (*gh.Client, error) {
		c := gh.NewClient(httpClient)
		if hc.BaseURL != nil && !strings.EqualFold(hc.BaseURL.Host, "api.github.com") {
			base := hc.BaseURL.String()
			return c.WithEnterpriseURLs(base, base)
		}
		return c, nil
	}

	if app := creds.GitHubApp; app != nil {
		// The App client signs with a JWT; the API client with installation tokens.
		signer := &jwtTransport{base: hc.Transport}
		appClient, err := newClient(&http.Client{Transport: signer, CheckRedirect: hc.CheckRedirect})
		if err != nil {
			return nil, fmt.Errorf("github: %w", err)
		}
		tokens, err := newInstallationTokens(app, appClient, p.fail)
		if err != nil {
			return nil, fmt.Errorf("github: %w", err)
		}
		signer.tokens = tokens
		p.client, err = newClient(&http.Client{
			Transport:     &installationTransport{base: hc.Transport, tokens: tokens},
			CheckRedirect: hc.CheckRedirect,
		})
		if err != nil {
			return nil, fmt.Errorf("github: %w", err)
		}
		p.checks = true
		return p, nil
	}

	c, err := newClient(hc.Client)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	p.client = c.WithAuthToken(creds.Token)
	return p, nil
}

// Type implements scm.Provider.
func (p *Provider) Type() string { return Name }

// Capabilities implements scm.Provider.
func (p *Provider) Capabilities() scm.Capabilities {
	return scm.Capabilities{CommitStatuses: true, ChecksAPI: p.checks, PullRequests: true, Webhooks: true}
}

// Limiter is the shared rate limiter this provider waits on.
func (p *Provider) Limiter() *ratelimit.Limiter { return p.limiter }

// ctx makes the shared Limiter the only judge of GitHub's rate limit: go-github would otherwise
// refuse requests on its own, per client, without the pause and wait logic.
func ctx(parent context.Context) context.Context {
	return context.WithValue(parent, gh.BypassRateLimitCheck, true)
}

// fail classifies a go-github error.
func (p *Provider) fail(op string, resp *gh.Response, err error) error {
	// A failure of the App token exchange surfaces here wrapped in the API call's error; its own
	// classification (a refused App key is a 401) is the one that matters.
	var tokenErr *scm.Error
	if errors.As(err, &tokenErr) {
		e := scm.NewError(Name, op, tokenErr.Kind, tokenErr.StatusCode, tokenErr.Op+": "+tokenErr.Message, tokenErr)
		e.RetryAfter = tokenErr.RetryAfter
		return e
	}
	f := scm.Failure{Provider: Name, Op: op, Err: err}
	if resp != nil {
		f.Response = resp.Response
	}
	var er *gh.ErrorResponse
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &er):
		f.ServerMessage = serverMessage(er)
		if f.Response == nil {
			f.Response = er.Response
		}
	case errors.As(err, &rl):
		return p.rateLimited(op, rl.Rate.Reset.Time.Sub(time.Now()), "GitHub's hourly API quota is spent", err)
	case errors.As(err, &abuse):
		// A secondary rate limit can arrive as a 403 without Retry-After; GitHub asks clients to
		// wait at least a minute then.
		wait := secondaryRateLimitWait
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			wait = *abuse.RetryAfter
		}
		return p.rateLimited(op, wait, "GitHub's secondary rate limit was hit", err)
	}
	return scm.Classify(f, p.redactor)
}

// secondaryRateLimitWait is GitHub's advice when a secondary rate limit comes without Retry-After.
const secondaryRateLimitWait = time.Minute

// rateLimited pauses the shared limiter, so no other caller spends a request on a refusal, and
// returns the rate-limited error.
func (p *Provider) rateLimited(op string, wait time.Duration, why string, cause error) error {
	wait = max(wait, time.Second)
	if p.limiter != nil {
		p.limiter.PauseUntil(time.Now().Add(wait), why)
	}
	e := scm.NewError(Name, op, scm.KindRateLimited, 0,
		fmt.Sprintf("rate limited: %s; retry after %s", why, wait.Round(time.Second)), cause)
	e.RetryAfter = wait
	return e
}

func serverMessage(er *gh.ErrorResponse) string {
	parts := []string{er.Message}
	for _, e := range er.Errors {
		detail := strings.TrimSpace(strings.Join(nonEmpty(e.Resource, e.Field, e.Code, e.Message), " "))
		if detail != "" {
			parts = append(parts, detail)
		}
	}
	return strings.Join(nonEmpty(parts...), "; ")
}

func nonEmpty(s ...string) []string {
	out := s[:0:0]
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func invalid(op string, err error) error { return scm.Invalid(Name, op, err) }
