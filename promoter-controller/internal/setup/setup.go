// Package setup wires the promoter-controller's reconcilers into a manager: Config, AddFlags,
// Validate and Setup(m, cfg), as every Sluice controller does. The reconcilers live beside it,
// one package per kind: internal/promotionstrategy and internal/pullrequest.
package setup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"

	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	_ "github.com/sluicehq/sluice/pkg/scm/builtin" // every provider
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	"github.com/sluicehq/sluice/promoter-controller/internal/pullrequest"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
	"github.com/sluicehq/sluice/promoter-controller/internal/rollbackhold"
	"github.com/sluicehq/sluice/promoter-controller/internal/webhook"
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

// AddFlags registers the controller's own flags on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.CacheDir, "git-cache-dir", filepath.Join(os.TempDir(), "sluice-promoter-git"),
		"Folder of the git cache: one bare repository per remote, kept across restarts.")
	fs.StringVar(&c.WebhookAddress, "webhook-bind-address", "0",
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

// Setup registers the PromotionStrategy and PullRequest reconcilers, their watches, the rollback
// holds and the webhook receiver. Errors are returned, never only logged.
func Setup(m *manager.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cache, err := git.NewCache(cfg.CacheDir, m.Log)
	if err != nil {
		return fmt.Errorf("git cache in %s: %w", cfg.CacheDir, err)
	}
	refs, err := newReferences(m)
	if err != nil {
		return err
	}
	promoterInformers := m.SluiceInformers.Promoter().V1alpha1()
	resolver := &repository.Resolver{Kube: m.Kube, Repos: refs.repoLister(), Providers: refs.providerLister(), Cache: cache}
	met := metrics.New(m.Metrics.Registry)
	holds := rollbackhold.New(refs.kinds, rollbacklisters.NewRevertCommitLister(refs.revertCommits.GetIndexer()))

	pullRequests := m.NewController("pullrequest", &pullrequest.Reconciler{
		Client: m.Sluice, PullRequests: promoterInformers.PullRequests().Lister(), Repositories: resolver, Kinds: refs.kinds,
		Recorder: m.Recorder, Metrics: met, Log: m.Log, Clock: m.Clock,
	})
	// One fetch per event: see promotionstrategy.Fetches.
	fetches := &promotionstrategy.Fetches{}
	strategies := m.NewController("promotionstrategy", &promotionstrategy.Reconciler{
		Client: m.Sluice, Strategies: promoterInformers.PromotionStrategies().Lister(),
		ProposedCommits: promoterInformers.ProposedCommits().Lister(),
		CommitStatuses:  commitstatuslisters.NewCommitStatusLister(refs.commitStatuses.GetIndexer()),
		Gates:           gatinglisters.NewGateLister(refs.gates.GetIndexer()), Holds: holds, Kinds: refs.kinds,
		Repositories: resolver, Recorder: m.Recorder, Metrics: met, Log: m.Log,
		PullRequestQueue: pullRequests, Clock: m.Clock, Fetches: fetches,
	})
	w := &watches{m: m, refs: refs, strategies: strategies, pullRequests: pullRequests}
	if err := w.register(); err != nil {
		return err
	}
	if !cfg.webhookEnabled() {
		return nil
	}
	return serveWebhooks(m, cfg, &webhook.Receiver{
		Kube: m.Kube, Client: m.Sluice, Providers: refs.providerLister(), Repos: refs.repoLister(),
		Strategies: promoterInformers.PromotionStrategies().Lister(), Queue: fetches.Waking(strategies), Metrics: met,
		Leading: m.Leading, Ready: m.Probes.Ready, Log: m.Log,
	})
}

func serveWebhooks(m *manager.Manager, cfg Config, receiver *webhook.Receiver) error {
	ln := cfg.WebhookListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.WebhookAddress); err != nil {
			return fmt.Errorf("webhook receiver on %s: %w", cfg.WebhookAddress, err)
		}
	}
	m.AddServer(func(ctx context.Context) error { return receiver.Serve(ctx, ln) })
	return nil
}
