// Package manager wires a controller process: clients, scoped informer factories, an Event
// recorder, metrics and probe servers, leader election and graceful shutdown. A controller's main
// builds a Manager, registers its reconcilers, and calls Run.
package manager

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	sluicescheme "github.com/sluicehq/sluice/api/generated/clientset/versioned/scheme"
	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/leaderelection"
	"github.com/sluicehq/sluice/pkg/runtime/metrics"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/runtime/probes"
)

// Manager owns everything a controller process shares between its reconcilers.
type Manager struct {
	Name    string
	Options options.Options
	Log     *slog.Logger

	RESTConfig *rest.Config
	Kube       kubernetes.Interface
	Sluice     sluice.Interface
	Dynamic    dynamic.Interface
	Metadata   metadata.Interface

	// Informer factories of the objects this process reconciles, scoped by --namespace and
	// --watch-label-selector. Only informers requested before Run are started with the caches
	// Run waits for.
	KubeInformers     kubeinformers.SharedInformerFactory
	SluiceInformers   sluiceinformers.SharedInformerFactory
	MetadataInformers metadatainformer.SharedInformerFactory
	DynamicInformers  dynamicinformer.DynamicSharedInformerFactory
	// ReferenceInformers are for the objects those name (see References): scoped by --namespace
	// only, started and waited for like the factories above.
	ReferenceInformers References

	// Clock is the time every reconciler reads (clock.RealClock here; a test may set a fake one
	// before Setup), so time-driven logic is tested without waiting.
	Clock    clock.Clock
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
	Metrics  *metrics.Registry
	Probes   *probes.Server
	// Observer, set by a test before Setup, is told of every key each controller enqueues and
	// reconciles (controller.Observer).
	Observer controller.Observer

	broadcaster record.EventBroadcaster
	controllers []*controller.Controller
	runnables   []func(context.Context) error
	servers     []func(context.Context) error
	waitFor     []cache.InformerSynced
	leading     atomic.Bool
}

// New builds a Manager from flags; cfg may be nil to load it from --kubeconfig or the cluster.
func New(name string, opts options.Options, cfg *rest.Config, log *slog.Logger) (*Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if cfg == nil {
		var err error
		if cfg, err = loadConfig(opts.Kubeconfig); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = float32(opts.KubeAPIQPS)
	cfg.Burst = opts.KubeAPIBurst
	cfg.UserAgent = name

	m := &Manager{Name: name, Options: opts, Log: log, RESTConfig: cfg, Metrics: metrics.NewRegistry(), Clock: clock.RealClock{}}
	var err error
	if m.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if m.Sluice, err = sluice.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("sluice client: %w", err)
	}
	if m.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if m.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}

	m.newInformerFactories()

	m.Scheme = runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(m.Scheme))
	utilruntime.Must(sluicescheme.AddToScheme(m.Scheme))
	m.broadcaster = newEventBroadcaster()
	m.Recorder = m.broadcaster.NewRecorder(m.Scheme, corev1.EventSource{Component: name})

	m.Probes = probes.New(probes.Addresses{Metrics: opts.MetricsBindAddress, Probes: opts.HealthProbeBindAddress, Profiler: opts.ProfilerBindAddress}, m.Metrics, log)
	return m, nil
}

// NewController creates a controller that runs with this manager, reporting into its metrics.
func (m *Manager) NewController(name string, r controller.Reconciler) *controller.Controller {
	c := controller.New(name, r, controller.Options{
		Metrics: m.Metrics, Logger: m.Log, Observer: m.Observer, ShutdownGracePeriod: m.Options.ShutdownGracePeriod,
	})
	m.controllers = append(m.controllers, c)
	return c
}

// WaitFor adds caches that must sync before the manager reports ready and controllers start.
// Informers obtained from the manager's factories before Run are waited for automatically.
func (m *Manager) WaitFor(synced ...cache.InformerSynced) {
	m.waitFor = append(m.waitFor, synced...)
}

// AddRunnable adds work that runs with the controllers: only while leading, when leader
// election is on.
func (m *Manager) AddRunnable(run func(context.Context) error) {
	m.runnables = append(m.runnables, run)
}

// AddServer adds work that runs on every replica for as long as Run does, leading or not: a
// receiver behind a Service answers whichever replica a request reaches. Check Leading before
// acting on a request.
func (m *Manager) AddServer(run func(context.Context) error) {
	m.servers = append(m.servers, run)
}

// Leading reports whether this replica takes new work now: while it holds the Lease, or once
// caches synced when leader election is off, until it is told to stop. A stopping leader only
// finishes the reconciles it has, so work handed to it must take a standby's way.
func (m *Manager) Leading() bool { return m.leading.Load() }

// Run serves probes, starts and syncs informers, then runs the controllers (under leader
// election when enabled) until ctx is done. Losing the Lease returns leaderelection.ErrLeaseLost.
func (m *Manager) Run(ctx context.Context) error {
	m.broadcaster.StartStructuredLogging(4)
	m.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.Kube.CoreV1().Events("")})
	defer m.broadcaster.Shutdown()

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Probes.Run(ctx) })
	for _, run := range m.servers {
		g.Go(func() error { return run(ctx) })
	}

	// Caches start before the election so a standby is warm and ready to take over at once.
	m.startInformers(ctx.Done())
	g.Go(func() error {
		if err := m.waitForCaches(ctx); err != nil {
			return err
		}
		m.trackConditions(ctx)
		m.Log.Info("caches synced; ready")
		m.Probes.SetReady()
		if !m.Options.LeaderElect {
			return m.runControllers(ctx)
		}
		identity, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leader election identity: %w", err)
		}
		identity = fmt.Sprintf("%s_%d_%d", identity, os.Getpid(), time.Now().UnixNano())
		elector := leaderelection.New(m.Kube, leaderelection.Config{
			Namespace:     m.Options.LeaderElectionNamespace,
			Name:          m.Options.LeaderElectionID,
			Identity:      identity,
			LeaseDuration: m.Options.LeaseDuration,
			RenewDeadline: m.Options.RenewDeadline,
			RetryPeriod:   m.Options.RetryPeriod,
		}, m.Log)
		m.Probes.AddLivezCheck("leader-election", elector.Watchdog().Check)
		return elector.Run(ctx, m.runControllers)
	})
	err := g.Wait()
	if ctx.Err() != nil && err == context.Canceled {
		return nil
	}
	return err
}

func (m *Manager) runControllers(ctx context.Context) error {
	m.leading.Store(true)
	defer m.leading.Store(false)
	defer context.AfterFunc(ctx, func() { m.leading.Store(false) })()
	g, ctx := errgroup.WithContext(ctx)
	for _, c := range m.controllers {
		g.Go(func() error { return c.Run(ctx, m.Options.Workers) })
	}
	for _, run := range m.runnables {
		g.Go(func() error { return run(ctx) })
	}
	// Leading lasts until ctx ends, even with nothing to run: returning early would read as a
	// lost Lease and end the process.
	g.Go(func() error {
		<-ctx.Done()
		return nil
	})
	return g.Wait()
}
