package setup

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/health-controller/internal/healthcheck"
	"github.com/sluicehq/sluice/pkg/access"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// addHealthChecks registers the HealthCheck reconciler and everything it watches: its own
// HealthChecks, the objects they judge (a dynamic watch per kind), the user library's ConfigMap,
// and CRDs (a kind installed later).
func (w *wiring) addHealthChecks() error {
	m := w.m
	hcInformer := m.SluiceInformers.Health().V1alpha1().HealthChecks()
	r := healthcheck.New()
	r.Lister, r.Client, r.Mapper = hcInformer.Lister(), m.Sluice, w.mapper
	r.Compiler, r.Builtin, r.Library = w.compiler, w.builtin, w.library
	r.Recorder, r.Log, r.Clock = m.Recorder, m.Log, m.Clock
	r.AllowCrossNamespaceRefs = !w.cfg.NoCrossNamespaceRefs
	r.DefaultServiceAccount = w.cfg.DefaultServiceAccount
	r.Access = &access.Reviewer{Reviews: m.Kube.AuthorizationV1().SubjectAccessReviews(), Clock: m.Clock}
	c := m.NewController("healthcheck", r)
	watcher := dynamicwatch.New(m.Dynamic, dynamicwatch.Options{
		OnEvent: func(s dynamicwatch.Scope, old, new *unstructured.Unstructured) {
			handler.EnqueueKeys(c, r.Owners(s, old, new))
		},
		OnSynced: func(_ dynamicwatch.Scope, owners []string) { handler.EnqueueKeys(c, owners) },
		OnError:  func(_ dynamicwatch.Scope, owners []string, _ error) { handler.EnqueueKeys(c, owners) },
		Log:      m.Log.With("component", "dynamicwatch"),
	})
	r.Watcher = watcher
	m.AddRunnable(watcher.Run)
	var err error
	if r.Metrics, err = healthcheck.NewMetrics(m.Metrics.Registry, watcher); err != nil {
		return err
	}
	w.healthChecks = r
	// The controller's own status writes must not wake it again.
	if err := handler.Register(handler.Watch(hcInformer.Informer(), handler.OnSpecOrMetadataChange(handler.EnqueueObject(c)))); err != nil {
		return err
	}
	if w.cfg.LibraryName != "" {
		if err := w.watchLibrary(c, hcInformer.Informer().GetStore()); err != nil {
			return err
		}
	}
	return w.watchCRDs(c)
}

// watchLibrary keeps the user library in step with its ConfigMap, watching that one object only.
func (w *wiring) watchLibrary(c *controller.Controller, healthChecks cache.Store) error {
	m, lib := w.m, w.library
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
		handler.EnqueueStore(c, healthChecks)
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

// rewakes are the delays after a CRD change at which discovery is read again and HealthChecks
// waiting for a kind look again.
var rewakes = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second}

// watchCRDs forgets discovery whenever a CRD changes, and wakes the HealthChecks waiting for a
// kind, so that installing a CRD is noticed without polling. Discovery can lag the CRD's
// Established condition, and the mapper never reads it again on a miss once it has read it after
// a reset; so discovery is forgotten, and the waiting HealthChecks woken, again after each of
// rewakes (CI saw a HealthCheck miss the CommitStatus CRD for good when only woken again).
func (w *wiring) watchCRDs(c *controller.Controller) error {
	wake := func() {
		w.mapper.Reset()
		for _, k := range w.healthChecks.Undiscovered() {
			c.Enqueue(k)
		}
	}
	run, err := crdwatch.Watch(w.m.Metadata, func(e crdwatch.Event) {
		if e.Initial {
			return
		}
		wake()
		for _, after := range rewakes {
			time.AfterFunc(after, wake)
		}
	})
	if err != nil {
		return err
	}
	w.m.AddRunnable(run)
	return nil
}
