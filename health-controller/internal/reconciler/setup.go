package reconciler

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery/cached/memory"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/health-controller/internal/userlib"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/health/library"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// Config holds the health-controller's own flags.
type Config struct {
	// LibraryNamespace and LibraryName locate the user library ConfigMap. An empty name disables
	// the user library.
	LibraryNamespace string
	LibraryName      string
	// NoCrossNamespaceRefs requires targets and sources in the HealthCheck's own namespace.
	NoCrossNamespaceRefs bool
	// CELCostLimit bounds the runtime cost of one expression evaluation.
	CELCostLimit uint64
}

// DefaultConfig reads the user library from the controller's own namespace (POD_NAMESPACE, set
// by the chart), or sluice-system outside a cluster.
func DefaultConfig() Config {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "sluice-system"
	}
	return Config{LibraryNamespace: ns, LibraryName: "health-library", CELCostLimit: cel.DefaultCostLimit}
}

// AddFlags registers the flags on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.LibraryNamespace, "library-configmap-namespace", c.LibraryNamespace,
		"namespace of the user library ConfigMap (defaults to $POD_NAMESPACE)")
	fs.StringVar(&c.LibraryName, "library-configmap-name", c.LibraryName,
		"name of the user library ConfigMap, whose keys hold RFC-0009 health checks that override the built-in library; empty disables it")
	fs.BoolVar(&c.NoCrossNamespaceRefs, "no-cross-namespace-refs", c.NoCrossNamespaceRefs,
		"require every target, Kustomization and Application to be in the HealthCheck's namespace (inventories may still span namespaces)")
	fs.Uint64Var(&c.CELCostLimit, "cel-cost-limit", c.CELCostLimit,
		"runtime cost after which a CEL evaluation stops with an error, making the object Unknown")
}

// Setup registers the HealthCheck reconciler and everything it watches on m.
func Setup(m *manager.Manager, cfg Config) (*Reconciler, error) {
	if cfg.CELCostLimit == 0 {
		return nil, fmt.Errorf("--cel-cost-limit must be positive")
	}
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
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(m.Kube.Discovery()))
	hcInformer := m.SluiceInformers.Health().V1alpha1().HealthChecks()

	r := &Reconciler{
		Lister:                  hcInformer.Lister(),
		Client:                  m.Sluice,
		Mapper:                  mapper,
		Compiler:                compiler,
		Builtin:                 builtin,
		Library:                 userlib.New(compiler, cfg.LibraryNamespace, cfg.LibraryName),
		Recorder:                m.Recorder,
		Log:                     m.Log,
		AllowCrossNamespaceRefs: !cfg.NoCrossNamespaceRefs,
		index:                   newIndex(),
	}
	c := m.NewController("healthcheck", r)
	enqueue := func(keys []string) {
		for _, k := range keys {
			c.Enqueue(k)
		}
	}
	r.Watcher = dynamicwatch.New(m.Dynamic, dynamicwatch.Options{
		OnEvent: func(s dynamicwatch.Scope, old, new *unstructured.Unstructured) {
			enqueue(r.index.owners(s, old, new))
		},
		OnSynced: func(_ dynamicwatch.Scope, owners []string) { enqueue(owners) },
		OnError:  func(_ dynamicwatch.Scope, owners []string, _ error) { enqueue(owners) },
		Log:      m.Log.With("component", "dynamicwatch"),
	})
	m.AddRunnable(r.Watcher.Run)
	if r.Metrics, err = NewMetrics(m.Metrics.Registry, r.Watcher); err != nil {
		return nil, err
	}

	if _, err := hcInformer.Informer().AddEventHandler(specChanges(c)); err != nil {
		return nil, err
	}
	enqueueAll := func() {
		hcs, err := r.Lister.List(labels.Everything())
		if err != nil {
			return
		}
		for _, hc := range hcs {
			c.Enqueue(handler.Key(hc))
		}
	}
	if cfg.LibraryName != "" {
		if err := watchLibrary(m, c, r.Library, cfg, enqueueAll); err != nil {
			return nil, err
		}
	}
	if err := watchCRDs(m, mapper, c, r); err != nil {
		return nil, err
	}
	return r, nil
}

// specChanges enqueues a HealthCheck when it appears, goes, or changes anything but its status:
// the controller's own status writes must not wake it again.
func specChanges(q handler.Enqueuer) cache.ResourceEventHandler {
	enqueue := handler.EnqueueObject(q)
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue.OnAdd(obj, false) },
		DeleteFunc: enqueue.OnDelete,
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := handler.Object(oldObj)
			n, okNew := handler.Object(newObj)
			if okOld && okNew && o.GetGeneration() == n.GetGeneration() &&
				equalMaps(o.GetAnnotations(), n.GetAnnotations()) && equalMaps(o.GetLabels(), n.GetLabels()) {
				return
			}
			enqueue.OnUpdate(oldObj, newObj)
		},
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// watchLibrary keeps the user library in step with its ConfigMap, watching that one object only.
func watchLibrary(m *manager.Manager, c *controller.Controller, lib *userlib.Library, cfg Config, enqueueAll func()) error {
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(m.Kube, 0,
		kubeinformers.WithNamespace(cfg.LibraryNamespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", cfg.LibraryName).String()
		}))
	informer := factory.Core().V1().ConfigMaps().Informer()
	update := func(obj any) {
		cm, _ := obj.(*corev1.ConfigMap)
		lib.Update(cm)
		if _, err := lib.Layer(); err != nil {
			m.Log.Error("user library is invalid; HealthChecks are Stalled until it is fixed", "configMap", lib.Ref(), "error", err)
		} else {
			m.Log.Info("user library loaded", "configMap", lib.Ref(), "checks", lib.Size())
		}
		enqueueAll()
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
		DeleteFunc: func(any) { update(nil) },
	})
	if err != nil {
		return err
	}
	// The first reconciles must see the library, so the workers wait for this handler.
	c.WaitFor(reg.HasSynced)
	m.AddRunnable(func(ctx context.Context) error {
		factory.Start(ctx.Done())
		<-ctx.Done()
		factory.Shutdown()
		return nil
	})
	return nil
}

// watchCRDs forgets discovery whenever a CRD changes, and wakes the HealthChecks waiting for a
// kind, so that installing a CRD is noticed without polling. Discovery can lag the CRD's
// Established condition by a moment, so they are woken again shortly after.
func watchCRDs(m *manager.Manager, mapper *restmapper.DeferredDiscoveryRESTMapper, c *controller.Controller, r *Reconciler) error {
	run, err := crdwatch.Watch(m.Metadata, func(e crdwatch.Event) {
		if e.Initial {
			return
		}
		mapper.Reset()
		for _, k := range r.Undiscovered() {
			c.Enqueue(k)
			c.EnqueueAfter(k, time.Second)
		}
	})
	if err != nil {
		return err
	}
	m.AddRunnable(run)
	return nil
}
