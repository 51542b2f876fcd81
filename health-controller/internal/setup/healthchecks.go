package setup

import (
	"context"
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

	"github.com/sluicehq/sluice/health-controller/internal/healthcheck"
	"github.com/sluicehq/sluice/health-controller/internal/userlib"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// deps are what the HealthCheck reconciler is built from.
type deps struct {
	compiler *cel.Compiler
	builtin  *health.Layer
	library  *userlib.Library
	// watchLibrary keeps library in step with its ConfigMap.
	watchLibrary bool
	// allowCrossNamespaceRefs lets targets and sources live in other namespaces than the
	// HealthCheck.
	allowCrossNamespaceRefs bool
}

// addHealthChecks registers the HealthCheck reconciler and everything it watches on m.
func addHealthChecks(m *manager.Manager, d deps) (*healthcheck.Reconciler, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(m.Kube.Discovery()))
	hcInformer := m.SluiceInformers.Health().V1alpha1().HealthChecks()
	r := healthcheck.New()
	r.Lister, r.Client, r.Mapper = hcInformer.Lister(), m.Sluice, mapper
	r.Compiler, r.Builtin, r.Library = d.compiler, d.builtin, d.library
	r.Recorder, r.Log, r.Clock = m.Recorder, m.Log, m.Clock
	r.AllowCrossNamespaceRefs = d.allowCrossNamespaceRefs
	c := m.NewController("healthcheck", r)
	watcher := dynamicwatch.New(m.Dynamic, dynamicwatch.Options{
		OnEvent: func(s dynamicwatch.Scope, old, new *unstructured.Unstructured) {
			enqueueAll(c, r.Owners(s, old, new))
		},
		OnSynced: func(_ dynamicwatch.Scope, owners []string) { enqueueAll(c, owners) },
		OnError:  func(_ dynamicwatch.Scope, owners []string, _ error) { enqueueAll(c, owners) },
		Log:      m.Log.With("component", "dynamicwatch"),
	})
	r.Watcher = watcher
	m.AddRunnable(watcher.Run)
	var err error
	if r.Metrics, err = healthcheck.NewMetrics(m.Metrics.Registry, watcher); err != nil {
		return nil, err
	}
	// The controller's own status writes must not wake it again.
	if _, err := hcInformer.Informer().AddEventHandler(handler.OnSpecOrMetadataChange(handler.EnqueueObject(c))); err != nil {
		return nil, err
	}
	if d.watchLibrary {
		if err := watchLibrary(m, c, r); err != nil {
			return nil, err
		}
	}
	if err := watchCRDs(m, mapper, c, r); err != nil {
		return nil, err
	}
	return r, nil
}

func enqueueAll(q handler.Enqueuer, keys []string) {
	for _, k := range keys {
		q.Enqueue(k)
	}
}

// enqueueEvery enqueues every HealthCheck, when something they all read changes.
func enqueueEvery(r *healthcheck.Reconciler, q handler.Enqueuer) {
	hcs, err := r.Lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, hc := range hcs {
		q.Enqueue(handler.Key(hc))
	}
}

// watchLibrary keeps the user library in step with its ConfigMap, watching that one object only.
func watchLibrary(m *manager.Manager, c *controller.Controller, r *healthcheck.Reconciler) error {
	lib := r.Library
	namespace, name := lib.Namespace(), lib.Name()
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(m.Kube, 0,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
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
		enqueueEvery(r, c)
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
func watchCRDs(m *manager.Manager, mapper *restmapper.DeferredDiscoveryRESTMapper, c *controller.Controller, r *healthcheck.Reconciler) error {
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
