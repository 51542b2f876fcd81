package setup

import (
	"github.com/sluicehq/sluice/gate-controller/internal/holding"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// addTargets registers the reconciler that holds and releases the targets (Flux objects and other
// kinds of --targets), brought back by the Gates that select them and by their own changes; the
// watcher adds each target kind as its CRD appears. addGates comes first: a target's change
// brings back its Gates too.
func (w *wiring) addTargets() error {
	m := w.m
	c := m.NewController("gate-targets", &holding.Reconciler{
		Registry:  w.registry,
		Gates:     w.gates.Lister(),
		Dynamic:   m.Dynamic,
		Recorder:  m.Recorder,
		Metrics:   w.metrics,
		Latency:   w.latency,
		Followers: w.followers,
		Log:       m.Log,
		Clock:     m.Clock,
	})
	w.targetController = c
	if err := handler.Register(handler.Watch(w.gates.Informer(), holding.GateHandler(w.registry, c, w.latency))); err != nil {
		return err
	}
	watcher := &holding.Watcher{
		Targets:   w.cfg.Targets,
		Discovery: m.Kube.Discovery(),
		Factory:   m.MetadataInformers,
		Metadata:  m.Metadata,
		Registry:  w.registry,
		OnWatch: func(watched *holding.Watched) error {
			_, err := watched.Informer.AddEventHandler(holding.TargetHandler(watched, c, w.gateController, w.followers))
			return err
		},
		Metrics: w.metrics,
		Log:     m.Log,
	}
	if err := watcher.Sync(); err != nil {
		return err
	}
	m.AddRunnable(watcher.Run)
	return nil
}
