package setup

import (
	"github.com/sluicehq/sluice/gate-controller/internal/gatestatus"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// addGates registers the reconciler of Gate status, brought back by its Gate's changes and by
// the Gates whose references it follows.
func (w *wiring) addGates() error {
	c := w.m.NewController("gates", &gatestatus.Reconciler{
		Gates:        w.gates.Lister(),
		Client:       w.m.Sluice,
		Recorder:     w.m.Recorder,
		Metrics:      w.metrics,
		Held:         w.registry.Held,
		Transitioned: w.latency.Transitioned,
		Clock:        w.m.Clock,
	})
	w.gateController = c
	return handler.Register(
		handler.Watch(w.gates.Informer(), handler.EnqueueObject(c)),
		handler.Watch(w.gates.Informer(), gatestatus.ReferenceHandler(w.gates.Lister(), c)),
	)
}
