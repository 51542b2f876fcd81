// Package setup wires the gate-controller's reconcilers into a manager: Config, AddFlags,
// Validate and Setup(m, cfg) error, the same in every controller module.
package setup

import (
	"flag"
	"fmt"

	"github.com/sluicehq/sluice/gate-controller/internal/gatestatus"
	"github.com/sluicehq/sluice/gate-controller/internal/holding"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/gate-controller/internal/metrics"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// Config is the gate-controller's own configuration.
type Config struct {
	// Targets are the kinds to hold; empty means kinds.Defaults().
	Targets []kinds.Target
}

// AddFlags registers --targets on fs. The value is parsed when the flags are.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	c.Targets = kinds.Defaults()
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
	if len(cfg.Targets) == 0 {
		cfg.Targets = kinds.Defaults()
	}
	gateMetrics := metrics.New(m.Metrics)
	registry := holding.NewRegistry()
	latency := holding.NewLatency()
	gateInformer := m.SluiceInformers.Gating().V1alpha1().Gates()

	gateController := m.NewController("gates", &gatestatus.Reconciler{
		Gates:        gateInformer.Lister(),
		Client:       m.Sluice,
		Recorder:     m.Recorder,
		Metrics:      gateMetrics,
		Held:         registry.Held,
		Transitioned: latency.Transitioned,
		Clock:        m.Clock,
	})
	targetController := m.NewController("gate-targets", &holding.Reconciler{
		Registry: registry,
		Gates:    gateInformer.Lister(),
		Dynamic:  m.Dynamic,
		Recorder: m.Recorder,
		Metrics:  gateMetrics,
		Latency:  latency,
		Log:      m.Log,
		Clock:    m.Clock,
	})
	if _, err := gateInformer.Informer().AddEventHandler(handler.EnqueueObject(gateController)); err != nil {
		return err
	}
	if _, err := gateInformer.Informer().AddEventHandler(gatestatus.ReferenceHandler(gateInformer.Lister(), gateController)); err != nil {
		return err
	}
	if _, err := gateInformer.Informer().AddEventHandler(holding.GateHandler(registry, targetController, latency)); err != nil {
		return err
	}

	watcher := &holding.Watcher{
		Targets:   cfg.Targets,
		Discovery: m.Kube.Discovery(),
		Factory:   m.MetadataInformers,
		Metadata:  m.Metadata,
		Registry:  registry,
		OnWatch: func(w *holding.Watched) error {
			_, err := w.Informer.AddEventHandler(holding.TargetHandler(w, targetController, gateController))
			return err
		},
		Metrics: gateMetrics,
		Log:     m.Log,
	}
	if err := watcher.Sync(); err != nil {
		return err
	}
	m.AddRunnable(watcher.Run)
	return nil
}
