package setup

import (
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/sluicehq/sluice/health-controller/internal/healthcheck"
	"github.com/sluicehq/sluice/health-controller/internal/userlib"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/health/library"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// wiring is what the reconcilers of the process are built from: the CEL compiler, the built-in
// and user libraries of health checks, the REST mapper, and the reconciler once added.
type wiring struct {
	m   *manager.Manager
	cfg Config

	compiler *cel.Compiler
	builtin  *health.Layer
	library  *userlib.Library
	mapper   *restmapper.DeferredDiscoveryRESTMapper

	healthChecks *healthcheck.Reconciler
}

func newWiring(m *manager.Manager, cfg Config) (*wiring, error) {
	compiler, err := cel.NewCompiler(cel.WithCostLimit(cfg.CELCostLimit))
	if err != nil {
		return nil, err
	}
	checks, err := library.Builtin()
	if err != nil {
		return nil, err
	}
	builtin, err := health.NewLayer(health.SourceBuiltin, checks)
	if err != nil {
		return nil, err
	}
	return &wiring{
		m: m, cfg: cfg,
		compiler: compiler,
		builtin:  builtin,
		library:  userlib.New(compiler, cfg.LibraryNamespace, cfg.LibraryName),
		mapper:   restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(m.Kube.Discovery())),
	}, nil
}
