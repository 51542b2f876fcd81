package crdwatch

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// Kinds runs the informers of kinds whose CRDs another chart installs. Each informer starts once
// its CRD is there, so a missing CRD neither keeps the controller from becoming ready nor fills
// its log with failed lists; reconcilers ask Missing, and say in a condition which CRDs a person
// must install. One metadata informer on CRDs serves every kind.
//
//	kinds := crdwatch.NewKinds(m.Metadata)
//	gates := gatinginformers.NewFilteredGateInformer(m.Sluice, ns, 0, indexers, nil)
//	kinds.Add(gatesResource, gates)       // before Run; handlers and listers as usual
//	kinds.OnChange(enqueueEverything)     // a CRD came (and its cache synced) or went
//	kinds.Log(m.Log, describeMissing)     // says once which CRDs are missing, then each that comes or goes
//	m.WaitFor(kinds.HasSynced)            // /readyz waits for the kinds installed at start
//	m.AddServer(kinds.Run)
type Kinds struct {
	crds   cache.SharedIndexInformer
	listed cache.ResourceEventHandlerRegistration

	log      *slog.Logger
	describe func(missing []schema.GroupResource) string

	mu       sync.Mutex
	ctx      context.Context
	kinds    map[schema.GroupResource]*kind
	onChange []func()
}

type kind struct {
	informer  cache.SharedIndexInformer
	installed bool
	started   bool
}

// NewKinds watches CRDs through client.
func NewKinds(client metadata.Interface) (*Kinds, error) {
	k := &Kinds{
		crds:  metadatainformer.NewFilteredMetadataInformer(client, Resource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer(),
		kinds: map[schema.GroupResource]*kind{},
	}
	changed := func(obj any, installed, initial bool) {
		if m, ok := handler.Object(obj); ok {
			k.crdChanged(ResourceOf(m.GetName()), installed, initial)
		}
	}
	var err error
	k.listed, err = k.crds.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { changed(obj, true, initial) },
		UpdateFunc: func(_, obj any) { changed(obj, true, false) },
		DeleteFunc: func(obj any) { changed(obj, false, false) },
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Add registers the informer of resource gr. Call it before Run, and add the informer's event
// handlers and take its lister as usual: they see nothing until the CRD is installed.
func (k *Kinds) Add(gr schema.GroupResource, informer cache.SharedIndexInformer) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kinds[gr] = &kind{informer: informer}
}

// OnChange adds f, called when a kind's CRD is installed and its cache synced, or when it is
// removed: what waited for the kind, or relied on it, is looked at again. f must return quickly.
func (k *Kinds) OnChange(f func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.onChange = append(k.onChange, f)
}

// Log makes Run tell log, once the CRDs are listed, which kinds' CRDs are missing (in the words
// of describe, which should name the chart that installs them), and then each CRD of a kind that
// is installed or removed later: once per change, never per reconcile. Call it before Run.
func (k *Kinds) Log(log *slog.Logger, describe func(missing []schema.GroupResource) string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log, k.describe = log, describe
}

// Run watches CRDs, and runs each kind's informer from when its CRD is installed, until ctx ends.
// Add it with manager.AddServer, so a standby replica is warm too. An informer keeps running if
// its CRD is removed: it lists again, on its own, once the CRD is back.
func (k *Kinds) Run(ctx context.Context) error {
	k.mu.Lock()
	k.ctx = ctx
	for _, kd := range k.kinds {
		if kd.installed {
			k.startLocked(kd)
		}
	}
	k.mu.Unlock()
	if k.log != nil {
		go k.logMissingOnceListed(ctx)
	}
	k.crds.RunWithContext(ctx)
	return nil
}

func (k *Kinds) logMissingOnceListed(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), k.listed.HasSynced) {
		return
	}
	k.mu.Lock()
	var all []schema.GroupResource
	for gr := range k.kinds {
		all = append(all, gr)
	}
	k.mu.Unlock()
	slices.SortFunc(all, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	if missing := k.Missing(all...); len(missing) > 0 {
		k.log.Warn("CRDs of other charts are not installed; what needs them waits, and says so in its status", "missing", k.describe(missing))
	}
}

// HasSynced reports whether the CRDs were listed, and the cache of every kind installed is
// synced. Add it with manager.WaitFor, so readiness covers the kinds installed at start.
func (k *Kinds) HasSynced() bool {
	if !k.listed.HasSynced() {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, kd := range k.kinds {
		if kd.installed && !kd.informer.HasSynced() {
			return false
		}
	}
	return true
}

// Listed reports whether the CRDs were listed: from then on Missing is true to the cluster.
func (k *Kinds) Listed() bool { return k.listed.HasSynced() }

// Missing returns those of grs whose CRD is not installed, in the order given. Before the CRDs
// are listed every kind counts as missing; Listed tells when that is over.
func (k *Kinds) Missing(grs ...schema.GroupResource) []schema.GroupResource {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []schema.GroupResource
	for _, gr := range grs {
		if kd, ok := k.kinds[gr]; !ok || !kd.installed {
			out = append(out, gr)
		}
	}
	return out
}

// Synced reports whether gr's CRD is installed and its cache synced: then its lister holds
// every object.
func (k *Kinds) Synced(gr schema.GroupResource) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	kd, ok := k.kinds[gr]
	return ok && kd.installed && kd.started && kd.informer.HasSynced()
}

func (k *Kinds) crdChanged(gr schema.GroupResource, installed, initial bool) {
	k.mu.Lock()
	kd, ok := k.kinds[gr]
	if !ok || kd.installed == installed {
		k.mu.Unlock()
		return
	}
	kd.installed = installed
	if installed && k.ctx != nil {
		k.startLocked(kd)
	}
	k.mu.Unlock()
	if !initial {
		k.logChange(gr, installed)
	}
	if !installed {
		k.notify()
	}
}

// logChange tells the log of a CRD installed or removed after the CRDs were listed: those
// listed at start are told once, together, by logMissingOnceListed.
func (k *Kinds) logChange(gr schema.GroupResource, installed bool) {
	if k.log == nil {
		return
	}
	if installed {
		k.log.Info("CRD installed; reading its kind", "resource", gr.String())
		return
	}
	k.log.Warn("CRD removed; what needs its kind waits, and says so in its status", "missing", k.describe([]schema.GroupResource{gr}))
}

// startLocked runs kd's informer once, and tells OnChange when its cache synced.
func (k *Kinds) startLocked(kd *kind) {
	if kd.started {
		k.notifyWhenSynced(kd)
		return
	}
	kd.started = true
	// A CRD is seen as soon as it is created, a moment before the API server serves its
	// resource; the reflector's first lists then answer NotFound and are retried. That is no
	// failure worth a log line (nor is it after the CRD is removed, which is logged once).
	_ = kd.informer.SetWatchErrorHandlerWithContext(quietWhileNotServed)
	go kd.informer.RunWithContext(k.ctx)
	k.notifyWhenSynced(kd)
}

func (k *Kinds) notifyWhenSynced(kd *kind) {
	ctx := k.ctx
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), kd.informer.HasSynced) {
			k.notify()
		}
	}()
}

func (k *Kinds) notify() {
	k.mu.Lock()
	fs := append([]func(){}, k.onChange...)
	k.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// quietWhileNotServed is client-go's watch error handler, less the NotFound of a resource the
// API server does not serve (yet, or any more).
func quietWhileNotServed(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsNotFound(err) {
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}
