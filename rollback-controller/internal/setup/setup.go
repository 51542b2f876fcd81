// Package setup wires the rollback-controller's reconcilers into a manager. It is the template
// every controller module follows: Config, AddFlags, Validate and Setup(m, cfg) error, which
// cmd/<name>/main.go hands to manager.Main, with one package per reconciled kind beside it
// (internal/<kind>), each observe -> decide -> apply. See docs/architecture.md.
package setup

import (
	"errors"
	"flag"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
)

// Config is the rollback-controller's own configuration, beside the shared flags of
// pkg/runtime/options.
type Config struct {
	// ManifestReleases configures ManifestReleases (RFC-0002).
	ManifestReleases manifestrelease.Config
	// Rollback configures RevertCommits and RollbackPolicies.
	Rollback RollbackConfig
}

// AddFlags registers the controller's own flags on fs, with their defaults: manager.Main starts
// from a zero Config.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	c.ManifestReleases.AddFlags(fs)
	c.Rollback.AddFlags(fs)
}

// Validate rejects a configuration no reconciler could run with, in words a person can act on.
func (c *Config) Validate() error {
	return errors.Join(c.ManifestReleases.Validate(), c.Rollback.Validate())
}

// Setup registers each reconciler. An error is returned, never only logged, so the process
// exits with the reason instead of running without a reconciler.
func Setup(m *manager.Manager, cfg Config) error {
	for _, add := range []func(*manager.Manager, Config) error{
		func(m *manager.Manager, cfg Config) error { return manifestrelease.Setup(m, cfg.ManifestReleases) },
		addRollbacks,
	} {
		if err := add(m, cfg); err != nil {
			return err
		}
	}
	return nil
}
