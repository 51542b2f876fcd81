// Package setup wires the gate-controller's reconcilers into a manager: of Gates (internal/gate)
// and of the Flux objects they hold (internal/targets), in the style every controller's setup
// follows (docs/architecture.md, "One setup style"): Config, Defaults, AddFlags, Validate and
// Setup here; what the kinds share in wiring.go; one file per kind (gates.go, holding.go).
package setup

import (
	"flag"
	"fmt"

	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// Config is the gate-controller's own configuration.
type Config struct {
	// Targets are the kinds to hold; empty means kinds.Defaults().
	Targets []kinds.Target
}

// Defaults returns the configuration the flags start from: every kind of kinds.Defaults().
func Defaults() Config {
	return Config{Targets: kinds.Defaults()}
}

// AddFlags registers --targets on fs, starting from Defaults: manager.Main starts from a zero
// Config. The value is parsed when the flags are.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	*c = Defaults()
	fs.Func("targets", fmt.Sprintf(
		"Kinds to hold, as comma-separated RESOURCE.GROUP=MODE entries; MODE is annotation, spec or both, and RESOURCE * means every resource of GROUP. Default: %s",
		kinds.FormatTargets(kinds.Defaults())), func(value string) error {
		targets, err := kinds.ParseTargets(value)
		if err != nil {
			return err
		}
		c.Targets = targets
		return nil
	})
}

// Validate rejects a configuration no reconciler could run with, in words a person can act on.
// Empty Targets mean the defaults.
func (c *Config) Validate() error {
	for _, t := range c.Targets {
		if _, err := kinds.ParseTargets(t.String()); err != nil {
			return err
		}
	}
	return nil
}

// Setup registers the Gate and target reconcilers and the watcher that adds target kinds as
// their CRDs appear.
//
// An error is returned, never only logged, so the process exits with the reason.
func Setup(m *manager.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	w := newWiring(m, cfg)
	for _, add := range []func() error{w.addGates, w.addTargets} {
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}
