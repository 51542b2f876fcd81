// Package gitlab is the GitLab provider (gitlab.com and self-managed), registered as "gitlab".
//
// Pull requests are merge requests; their number is the merge request iid. The repository owner
// may be a nested group path ("group/subgroup"); the project is addressed by its full path.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// Name is the registered provider name.
const Name = "gitlab"

// DefaultBaseURL is gitlab.com.
const DefaultBaseURL = "https://gitlab.com"

// DefaultLimits stay well under gitlab.com's 2,000 authenticated API requests per minute and
// under the defaults of self-managed instances.
var DefaultLimits = ratelimit.Limits{QPS: 5, Burst: 20}

func init() {
	scm.MustRegister(Name, New)
}

// Provider talks to one GitLab instance.
type Provider struct {
	client        *gl.Client
	webhookSecret []byte
	redactor      *scm.Redactor
	limiter       *ratelimit.Limiter
}

var _ scm.Provider = (*Provider)(nil)

// New builds a provider. BaseURL empty means gitlab.com; /api/v4 is added when missing.
func New(cfg scm.Config) (scm.Provider, error) {
	return NewProvider(cfg)
}

// NewProvider is New with the concrete type.
func NewProvider(cfg scm.Config) (*Provider, error) {
	if cfg.Credentials.Token == "" {
		return nil, errors.New("gitlab: no token: put a project, group or personal access token with the api scope " +
			"under the key token in the ScmProvider's Secret")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	hc, err := cfg.NewHTTPClient(DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	client, err := gl.NewClient(cfg.Credentials.Token,
		gl.WithBaseURL(hc.BaseURL.String()),
		gl.WithHTTPClient(hc.Client),
		// Sluice's shared limiter and transport own retries and rate limits; the SDK's own would
		// retry behind their back and keep a second, per-client budget.
		gl.WithoutRetries(),
		gl.WithCustomLimiter(unlimited{}),
		gl.WithURLWarningLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	return &Provider{
		client:        client,
		webhookSecret: cfg.Credentials.WebhookSecret,
		redactor:      cfg.Credentials.Redactor(),
		limiter:       hc.Limiter,
	}, nil
}

type unlimited struct{}

func (unlimited) Wait(context.Context) error { return nil }

// Type implements scm.Provider.
func (p *Provider) Type() string { return Name }

// Capabilities implements scm.Provider.
func (p *Provider) Capabilities() scm.Capabilities {
	return scm.Capabilities{CommitStatuses: true, PullRequests: true, Webhooks: true}
}

// Limiter is the shared rate limiter this provider waits on.
func (p *Provider) Limiter() *ratelimit.Limiter { return p.limiter }

func project(repo scm.Repository) string { return repo.Owner + "/" + repo.Name }

// fail classifies a client-go error.
func (p *Provider) fail(op string, resp *gl.Response, err error) *scm.Error {
	f := scm.Failure{Provider: Name, Op: op, Err: err}
	if resp != nil {
		f.Response = resp.Response
	}
	var er *gl.ErrorResponse
	if errors.As(err, &er) {
		f.ServerMessage = er.Message
		if f.Response == nil {
			f.Response = er.Response
		}
	}
	return scm.Classify(f, p.redactor)
}

func invalid(op string, err error) error { return scm.Invalid(Name, op, err) }

func isStatus(resp *gl.Response, code int) bool {
	return resp != nil && resp.Response != nil && resp.StatusCode == code
}

// serverSays reports whether the SCM's explanation contains s.
func serverSays(err *scm.Error, s string) bool {
	return strings.Contains(strings.ToLower(err.Message), strings.ToLower(s))
}
