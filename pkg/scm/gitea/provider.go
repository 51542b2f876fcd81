// Package gitea is the Gitea and Forgejo provider, registered as "gitea" and "forgejo".
//
// Forgejo keeps Gitea's REST API; the two differ here only in webhook header names. The provider
// needs Gitea 1.17 or later (or any Forgejo), which enforce the expected head on merge.
package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// Registered provider names.
const (
	Name        = "gitea"
	ForgejoName = "forgejo"
)

// DefaultLimits are polite for a server that, by default, does not limit its API at all.
var DefaultLimits = ratelimit.Limits{QPS: 5, Burst: 20}

func init() {
	scm.MustRegister(Name, New)
	scm.MustRegister(ForgejoName, NewForgejo)
}

// Provider talks to one Gitea or Forgejo server.
type Provider struct {
	name          string
	baseURL       string
	token         string
	http          *http.Client
	webhookSecret []byte
	redactor      *scm.Redactor
	limiter       *ratelimit.Limiter
}

var _ scm.Provider = (*Provider)(nil)

// New builds a Gitea provider. BaseURL is required: the server's root URL, without /api/v1.
func New(cfg scm.Config) (scm.Provider, error) { return NewProvider(Name, cfg) }

// NewForgejo builds a Forgejo provider.
func NewForgejo(cfg scm.Config) (scm.Provider, error) { return NewProvider(ForgejoName, cfg) }

// NewProvider builds a provider registered under name (gitea or forgejo).
func NewProvider(name string, cfg scm.Config) (*Provider, error) {
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("%s: baseURL is required: the server's root URL, such as https://gitea.example.com", name)
	}
	if cfg.Credentials.Token == "" {
		return nil, fmt.Errorf("%s: no token: create an access token with repository read and write scope "+
			"and put it under the key token in the ScmProvider's Secret", name)
	}
	hc, err := cfg.NewHTTPClient(DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Provider{
		name:          name,
		baseURL:       hc.BaseURL.String(),
		token:         cfg.Credentials.Token,
		http:          hc.Client,
		webhookSecret: cfg.Credentials.WebhookSecret,
		redactor:      cfg.Credentials.Redactor(),
		limiter:       hc.Limiter,
	}, nil
}

// api returns an SDK client bound to ctx. The SDK keeps its context on the client rather than
// taking one per call, so a client per call is the only way to honour each caller's deadline;
// it is a small struct over the shared http.Client. The server version probe is skipped: it
// would cost a request per client.
func (p *Provider) api(ctx context.Context) (*sdk.Client, error) {
	return sdk.NewClient(p.baseURL,
		sdk.SetHTTPClient(p.http),
		sdk.SetToken(p.token),
		sdk.SetContext(ctx),
		sdk.SetGiteaVersion(""),
	)
}

// Type implements scm.Provider.
func (p *Provider) Type() string { return p.name }

// Capabilities implements scm.Provider.
func (p *Provider) Capabilities() scm.Capabilities {
	return scm.Capabilities{CommitStatuses: true, PullRequests: true, Webhooks: true}
}

// Limiter is the shared rate limiter this provider waits on.
func (p *Provider) Limiter() *ratelimit.Limiter { return p.limiter }

// fail classifies an SDK error. The SDK turns an error answer into a plain error carrying the
// server's message, so the status comes from resp.
func (p *Provider) fail(op string, resp *sdk.Response, err error) *scm.Error {
	f := scm.Failure{Provider: p.name, Op: op, Err: err}
	if resp != nil && resp.Response != nil {
		f.Response = resp.Response
		if err != nil && resp.StatusCode >= 400 {
			f.ServerMessage = err.Error()
		}
	}
	if f.Response == nil && err == nil {
		f.Err = errors.New("no answer")
	}
	return scm.Classify(f, p.redactor)
}

func (p *Provider) invalid(op string, err error) error { return scm.Invalid(p.name, op, err) }
