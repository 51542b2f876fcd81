// Package setup wires the commitstatus-controller into a manager: the reconcilers of
// CommitStatus (internal/commitstatus), ScmProvider (internal/scmprovider) and ScmRepository
// (internal/scmrepository) status, the watches that bring each back when what it reads changes,
// and the SCM metrics. cmd/commitstatus-controller hands Config and Setup to manager.Main.
package setup

import (
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/commitstatus"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmimport"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"

	// Every built-in SCM provider.
	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

// Queue names of the reconcilers, which label their logs and metrics.
const (
	ControllerName           = "commitstatuses"
	ProviderControllerName   = "scmproviders"
	RepositoryControllerName = "scmrepositories"
)

// Config is the commitstatus-controller's own configuration.
type Config struct {
	// RecheckInterval: see commitstatus.Reconciler.RecheckInterval; it also paces ScmProviders and
	// ScmRepositories waiting for a Secret that is not watched.
	RecheckInterval time.Duration
	// CallTimeout: see commitstatus.Reconciler.CallTimeout.
	CallTimeout time.Duration
	// CredentialsTTL: see resolve.Resolver.CredentialsTTL.
	CredentialsTTL time.Duration
	// RateLimitMaxWait is how long a call waits in line for an SCM's rate-limit pause before the
	// CommitStatus is requeued for when the pause ends, freeing the worker.
	RateLimitMaxWait time.Duration

	// Import turns on the import of the SCM's statuses for PromotionStrategies (internal/scmimport).
	Import bool
	// ImportPollInterval: see scmimport.Reconciler.PollInterval.
	ImportPollInterval time.Duration
	// WebhookAddress is where the status webhook receiver listens; "" or "0" disables it.
	WebhookAddress string
	// WebhookListener, when set, is used instead of WebhookAddress (tests listen on port 0).
	WebhookListener net.Listener
	// Limiters and Resolver hooks for tests; nil means the process-wide defaults.
	Limiters *ratelimit.Registry
}

// Defaults returns the configuration the flags start from.
func Defaults() Config {
	return Config{
		RecheckInterval:    commitstatus.DefaultRecheckInterval,
		CallTimeout:        commitstatus.DefaultCallTimeout,
		CredentialsTTL:     resolve.DefaultCredentialsTTL,
		RateLimitMaxWait:   5 * time.Second,
		Import:             true,
		ImportPollInterval: scmimport.DefaultPollInterval,
		WebhookAddress:     "0",
	}
}

// AddFlags registers the controller's flags on fs, starting from Defaults: manager.Main starts
// from a zero Config.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	*c = Defaults()
	fs.DurationVar(&c.RecheckInterval, "stalled-recheck-interval", c.RecheckInterval,
		"How often a CommitStatus stalled on a Secret or an SCM refusal, or an ScmProvider or ScmRepository waiting for a Secret that is not watched, is looked at again; no SCM call is made unless the object or the credentials changed.")
	fs.DurationVar(&c.CallTimeout, "scm-call-timeout", c.CallTimeout,
		"Longest time one SCM call may take, waits for the shared rate limiter included.")
	fs.DurationVar(&c.CredentialsTTL, "credentials-cache-ttl", c.CredentialsTTL,
		"How long a Secret read is reused; a rotated token is in use within this time.")
	fs.DurationVar(&c.RateLimitMaxWait, "scm-rate-limit-max-wait", c.RateLimitMaxWait,
		"Longest wait for an SCM's rate-limit pause inside one call; longer pauses requeue the CommitStatus for when the pause ends.")
	fs.BoolVar(&c.Import, "import-scm-statuses", c.Import,
		"Import the SCM's commit statuses, check runs and pipelines of the commits each PromotionStrategy tracks, as read-only CommitStatuses; off when the PromotionStrategy CRD is not installed.")
	fs.DurationVar(&c.ImportPollInterval, "import-poll-interval", c.ImportPollInterval,
		"How often the imported statuses of a strategy's commits are read again without a webhook; the reads share each ScmProvider's rate limit with the statuses this controller writes.")
	fs.StringVar(&c.WebhookAddress, "webhook-bind-address", c.WebhookAddress,
		"Address of the status webhook receiver (POST /hooks/<namespace>/<scmprovider>), which wakes the import; 0 disables it.")
}

// Validate rejects values no reconciler could run with.
func (c Config) Validate() error {
	if c.Import && c.ImportPollInterval < time.Second {
		return fmt.Errorf("--import-poll-interval must be at least 1s, for example 2m")
	}
	if c.WebhookListener == nil && c.WebhookAddress != "" && c.WebhookAddress != "0" {
		if _, _, err := net.SplitHostPort(c.WebhookAddress); err != nil {
			return fmt.Errorf("--webhook-bind-address %q is not host:port (for example :9444), or 0 to disable the receiver: %v", c.WebhookAddress, err)
		}
	}
	if c.RecheckInterval <= 0 || c.CallTimeout <= 0 || c.CredentialsTTL <= 0 || c.RateLimitMaxWait < 0 {
		return fmt.Errorf("--stalled-recheck-interval, --scm-call-timeout and --credentials-cache-ttl must be positive, and --scm-rate-limit-max-wait not negative")
	}
	return nil
}

// Setup registers the reconcilers and their watches on m. Every error is returned, so the process
// exits with the reason instead of running without a reconciler.
func Setup(m *manager.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	w, err := newWiring(m, cfg)
	if err != nil {
		return err
	}
	for _, add := range []func() error{w.addCommitStatuses, w.addScmProviders, w.addScmRepositories, w.watchSecrets, w.addImports} {
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}
