// Package setup wires the promoter-controller's reconcilers into a manager: of PullRequests
// (internal/pullrequest) and PromotionStrategies (internal/promotionstrategy), and the webhook
// receiver (internal/webhook), in the style every controller's setup follows
// (docs/architecture.md, "One setup style"): Config, Defaults, AddFlags, Validate and Setup here;
// what the kinds share in wiring.go (the other charts' kinds they read among it); one file per
// kind (pullrequests.go, promotionstrategies.go) and webhook.go.
package setup

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	_ "github.com/sluicehq/sluice/pkg/scm/builtin" // every provider
)

// Config is the promoter-controller's own configuration, beside the shared flags.
type Config struct {
	// CacheDir holds the git cache: one bare repository per remote, kept across restarts.
	CacheDir string
	// WebhookAddress is where the webhook receiver listens; "" or "0" disables it.
	WebhookAddress string
	// WebhookListener, when set, is used instead of WebhookAddress (tests listen on port 0 and
	// need the address before the controller starts).
	WebhookListener net.Listener
}

// Defaults returns the configuration the flags start from: the git cache in the temporary
// folder, the webhook receiver off.
func Defaults() Config {
	return Config{CacheDir: filepath.Join(os.TempDir(), "sluice-promoter-git"), WebhookAddress: "0"}
}

// AddFlags registers the controller's own flags on fs, starting from Defaults: manager.Main
// starts from a zero Config.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	*c = Defaults()
	fs.StringVar(&c.CacheDir, "git-cache-dir", c.CacheDir,
		"Folder of the git cache: one bare repository per remote, kept across restarts.")
	fs.StringVar(&c.WebhookAddress, "webhook-bind-address", c.WebhookAddress,
		"Address of the webhook receiver (POST /hooks/<namespace>/<scmprovider>); 0 disables it.")
}

// Validate rejects a configuration no reconciler could run with, in words a person can act on.
func (c *Config) Validate() error {
	if c.CacheDir == "" {
		return errors.New("--git-cache-dir is empty: give a folder the controller may write, for example /var/cache/sluice")
	}
	if c.webhookEnabled() && c.WebhookListener == nil {
		if _, _, err := net.SplitHostPort(c.WebhookAddress); err != nil {
			return fmt.Errorf("--webhook-bind-address %q is not host:port (for example :9443), or 0 to disable the receiver: %v", c.WebhookAddress, err)
		}
	}
	return nil
}

func (c *Config) webhookEnabled() bool {
	return c.WebhookListener != nil || (c.WebhookAddress != "" && c.WebhookAddress != "0")
}

// Setup registers the PullRequest and PromotionStrategy reconcilers, their watches, the rollback
// holds and the webhook receiver. Errors are returned, never only logged.
func Setup(m *manager.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	w, err := newWiring(m, cfg)
	if err != nil {
		return err
	}
	for _, add := range []func() error{w.addPullRequests, w.addPromotionStrategies, w.addWebhookReceiver} {
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}
