package setup

import (
	gatinginformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/holding"
	"github.com/sluicehq/sluice/gate-controller/internal/metrics"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// wiring is what the Gate and target reconcilers share: the Gate informer, the registry of held
// targets, the latency of holds and releases, the metrics, and the controllers once added.
type wiring struct {
	m   *manager.Manager
	cfg Config

	gates    gatinginformers.GateInformer
	registry *holding.Registry
	latency  *holding.Latency
	// followers are the targets that wait on a source's revision for an approval.
	followers *holding.Followers
	metrics   *metrics.Gates

	gateController, targetController *controller.Controller
}

func newWiring(m *manager.Manager, cfg Config) *wiring {
	if len(cfg.Targets) == 0 {
		cfg.Targets = Defaults().Targets
	}
	return &wiring{
		m: m, cfg: cfg,
		gates:     m.SluiceInformers.Gating().V1alpha1().Gates(),
		registry:  holding.NewRegistry(),
		latency:   holding.NewLatency(),
		followers: holding.NewFollowers(),
		metrics:   metrics.New(m.Metrics),
	}
}
