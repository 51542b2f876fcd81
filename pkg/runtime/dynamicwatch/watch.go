// Package dynamicwatch keeps dynamic informers running only while something needs them. Owners
// (for example the keys of the objects a controller reconciles) declare the scopes they read; a
// scope's informer starts when its first owner asks for it and stops when its last owner lets go.
// This is for controllers whose watched kinds come from user input and change at runtime, where
// a shared informer factory, which never stops an informer, would hold every kind ever asked for.
package dynamicwatch

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// Scope is one watch: a resource in one namespace, or across all namespaces (and for
// cluster-scoped resources) when Namespace is empty.
type Scope struct {
	Resource  schema.GroupVersionResource
	Namespace string
}

func (s Scope) String() string {
	r := s.Resource.Resource
	if s.Resource.Group != "" {
		r += "." + s.Resource.Group
	}
	r += "/" + s.Resource.Version
	if s.Namespace == "" {
		return r
	}
	return r + " in namespace " + s.Namespace
}

// Options configure a Watcher. Callbacks run on informer goroutines and must return quickly,
// typically by enqueueing keys.
type Options struct {
	// Transform runs on every object before it is stored, before the owners' Fields are kept.
	// Nil uses StripManagedFields.
	Transform cache.TransformFunc
	// OnEvent receives adds (old is nil), updates with a new resourceVersion, and deletes (new is
	// nil, old is the last state known).
	OnEvent func(scope Scope, old, new *unstructured.Unstructured)
	// OnSynced is called once per watch, after its first list, with the owners at that moment.
	OnSynced func(scope Scope, owners []string)
	// OnError is called when a watch cannot list or watch (missing RBAC, a deleted CRD), with the
	// owners at that moment. The informer retries with backoff, so calls are spaced out.
	OnError func(scope Scope, owners []string, err error)
	// Log receives debug messages about starts, stops and errors. Nil discards them.
	Log *slog.Logger
}

// Watcher runs dynamic informers on demand. It is safe for concurrent use.
type Watcher struct {
	client dynamic.Interface
	opts   Options

	mu      sync.Mutex
	ctx     context.Context // nil until Run
	watches map[Scope]*watch
	owned   map[string]map[Scope]struct{}
}

type watch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	// fields is what the informer keeps; needs is what each owner reads.
	fields  Fields
	needs   map[string]Fields
	started bool
	// wider, while not nil, is an informer listing again with more fields, which replaces
	// informer once it has listed.
	wider *replacement

	errMu   sync.Mutex
	lastErr error
}

type replacement struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	fields   Fields
}

// Need is a scope and the fields of its objects an owner reads.
type Need struct {
	Scope  Scope
	Fields Fields
}

// needsAll is what Add and Set ask for: every field.
func needsAll(scopes []Scope) []Need {
	needs := make([]Need, len(scopes))
	for i, s := range scopes {
		needs[i] = Need{Scope: s, Fields: All}
	}
	return needs
}

// alwaysKept are the fields every cache keeps, whatever its owners read: the informer keys
// objects by namespace and name, List selects by label, OnEvent compares resourceVersions, and
// the kind and uid say what an object is.
var alwaysKept = FieldsOf([]string{"apiVersion"}, []string{"kind"}, []string{"metadata", "name"}, []string{"metadata", "namespace"},
	[]string{"metadata", "uid"}, []string{"metadata", "resourceVersion"}, []string{"metadata", "labels"})

// New returns a Watcher that lists and watches through client.
func New(client dynamic.Interface, opts Options) *Watcher {
	if opts.Transform == nil {
		opts.Transform = StripManagedFields
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{client: client, opts: opts, watches: map[Scope]*watch{}, owned: map[string]map[Scope]struct{}{}}
}

// Run starts the watches asked for so far, and later ones as they are asked for, until ctx is
// done; then it stops them all.
func (w *Watcher) Run(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	for scope, wt := range w.watches {
		w.start(scope, wt)
	}
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.watches {
		wt.cancel()
		if wt.wider != nil {
			wt.wider.cancel()
		}
	}
	// Owners start over with the next Run, as after a restart.
	w.watches = map[Scope]*watch{}
	w.owned = map[string]map[Scope]struct{}{}
	w.ctx = nil
	return nil
}

// Add makes owner an owner of scopes, reading every field of their objects, starting the
// watches that are new, and keeps what owner already holds.
func (w *Watcher) Add(owner string, scopes ...Scope) { w.AddNeeds(owner, needsAll(scopes)...) }

// Set makes owner own exactly scopes, reading every field of their objects: new watches start,
// and watches that no owner needs any more stop and drop their cache.
func (w *Watcher) Set(owner string, scopes ...Scope) { w.SetNeeds(owner, needsAll(scopes)...) }

// AddNeeds is Add with the fields owner reads in each scope. A watch's cache keeps what its
// owners read; when an owner reads more than the cache keeps, the watch lists again with the
// wider fields. Until it has, StateFor reports the scope not synced to that owner, while the
// other owners go on reading the cache they had.
func (w *Watcher) AddNeeds(owner string, needs ...Need) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range needs {
		w.acquire(owner, n.Scope, n.Fields)
	}
}

// SetNeeds is Set with the fields owner reads in each scope (see AddNeeds). A cache does not
// shrink when its owners come to read less; it does when its watch stops.
func (w *Watcher) SetNeeds(owner string, needs ...Need) {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := make(map[Scope]struct{}, len(needs))
	for _, n := range needs {
		want[n.Scope] = struct{}{}
		w.acquire(owner, n.Scope, n.Fields)
	}
	for s := range w.owned[owner] {
		if _, ok := want[s]; !ok {
			w.release(owner, s)
		}
	}
}

// Release lets go of everything owner holds.
func (w *Watcher) Release(owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.owned[owner] {
		w.release(owner, s)
	}
}

// Owned returns the scopes owner holds.
func (w *Watcher) Owned(owner string) []Scope {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Collect(maps.Keys(w.owned[owner]))
}

// State reports whether the scope's watch has listed, and the last error it met while it has
// not. A scope nobody asked for is not synced.
func (w *Watcher) State(s Scope) (synced bool, err error) { return w.state(s, "", false) }

// StateFor is State for one owner: the scope is synced for owner once its cache keeps the
// fields owner reads. While a watch lists again to keep more fields, its other owners read on.
func (w *Watcher) StateFor(owner string, s Scope) (synced bool, err error) {
	return w.state(s, owner, true)
}

func (w *Watcher) state(s Scope, owner string, forOwner bool) (bool, error) {
	w.mu.Lock()
	wt, ok := w.watches[s]
	var informer cache.SharedIndexInformer
	covered := true
	if ok {
		informer = wt.informer
		if forOwner {
			need, owns := wt.needs[owner]
			covered = owns && Covers(wt.fields, need)
		}
	}
	w.mu.Unlock()
	if !ok {
		return false, nil
	}
	if covered && informer.HasSynced() {
		return true, nil
	}
	wt.errMu.Lock()
	defer wt.errMu.Unlock()
	return false, wt.lastErr
}

// Get returns an object from the scope's cache. The object is shared: do not modify it.
func (w *Watcher) Get(s Scope, namespace, name string) (*unstructured.Unstructured, bool, error) {
	store, err := w.syncedStore(s)
	if err != nil {
		return nil, false, err
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return nil, false, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false, fmt.Errorf("%s: cache holds %T, not an unstructured object", s, obj)
	}
	return u, true, nil
}

// List returns the objects of the scope's cache whose labels match selector (nil matches all).
// The objects are shared: do not modify them.
func (w *Watcher) List(s Scope, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	store, err := w.syncedStore(s)
	if err != nil {
		return nil, err
	}
	if selector == nil {
		selector = labels.Everything()
	}
	var out []*unstructured.Unstructured
	for _, obj := range store.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if ok && selector.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	return out, nil
}

// ScopeStats describes one running watch.
type ScopeStats struct {
	Scope   Scope
	Owners  int
	Objects int
	Synced  bool
}

// Stats describes every watch, for metrics.
func (w *Watcher) Stats() []ScopeStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]ScopeStats, 0, len(w.watches))
	for s, wt := range w.watches {
		out = append(out, ScopeStats{Scope: s, Owners: len(wt.needs), Objects: len(wt.informer.GetStore().ListKeys()),
			Synced: wt.informer.HasSynced()})
	}
	return out
}

func (w *Watcher) syncedStore(s Scope) (cache.Store, error) {
	w.mu.Lock()
	wt, ok := w.watches[s]
	var informer cache.SharedIndexInformer
	if ok {
		informer = wt.informer
	}
	w.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s is not watched", s)
	}
	if !informer.HasSynced() {
		return nil, fmt.Errorf("%s has not listed yet", s)
	}
	return informer.GetStore(), nil
}

// acquire and release are called with w.mu held.
func (w *Watcher) acquire(owner string, s Scope, f Fields) {
	if w.owned[owner] == nil {
		w.owned[owner] = map[Scope]struct{}{}
	}
	w.owned[owner][s] = struct{}{}
	if f != nil {
		f = Union(f, alwaysKept)
	}
	wt, ok := w.watches[s]
	if !ok {
		wt = &watch{needs: map[string]Fields{owner: f}, fields: f}
		wt.informer = w.newInformer(s, wt, f)
		w.watches[s] = wt
		if w.ctx != nil {
			w.start(s, wt)
		}
		return
	}
	wt.needs[owner] = f
	if want := wt.wanted(); !Covers(wt.fields, want) && (wt.wider == nil || !Covers(wt.wider.fields, want)) {
		w.widen(s, wt, want)
	}
}

// wanted is what the owners read together.
func (wt *watch) wanted() Fields {
	want := Fields{}
	for _, f := range wt.needs {
		want = Union(want, f)
	}
	return want
}

func (w *Watcher) release(owner string, s Scope) {
	delete(w.owned[owner], s)
	if len(w.owned[owner]) == 0 {
		delete(w.owned, owner)
	}
	wt, ok := w.watches[s]
	if !ok {
		return
	}
	delete(wt.needs, owner)
	if len(wt.needs) > 0 {
		return
	}
	if wt.cancel != nil {
		wt.cancel()
	}
	if wt.wider != nil {
		wt.wider.cancel()
	}
	delete(w.watches, s)
	w.opts.Log.Debug("stopped watch", "scope", s.String())
}

func (w *Watcher) ownersOf(s Scope) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.watches[s]
	if !ok {
		return nil
	}
	return slices.Sorted(maps.Keys(wt.needs))
}

// newInformer builds an informer for s that keeps fields, reporting its errors on wt.
func (w *Watcher) newInformer(s Scope, wt *watch, fields Fields) cache.SharedIndexInformer {
	informer := dynamicinformer.NewFilteredDynamicInformer(w.client, s.Resource, s.Namespace, 0, cache.Indexers{}, nil).Informer()
	transform := w.opts.Transform
	if fields != nil {
		keep := keepFields(fields)
		transform = func(obj any) (any, error) {
			obj, err := w.opts.Transform(obj)
			if err != nil {
				return obj, err
			}
			return keep(obj)
		}
	}
	// Neither call can fail on an informer that has not started.
	_ = informer.SetTransform(transform)
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if ctx.Err() != nil {
			return
		}
		wt.errMu.Lock()
		wt.lastErr = err
		wt.errMu.Unlock()
		w.opts.Log.Debug("watch failed; retrying with backoff", "scope", s.String(), "error", err)
		if w.opts.OnError != nil {
			w.opts.OnError(s, w.ownersOf(s), err)
		}
	})
	if w.opts.OnEvent != nil {
		_, _ = informer.AddEventHandler(eventHandler(s, w.opts.OnEvent))
	}
	return informer
}

// widen replaces the informer of s by one that keeps fields. Before Run, the informer is simply
// rebuilt; after, the new one lists while the old one serves, and replaces it once listed.
// Called with w.mu held.
func (w *Watcher) widen(s Scope, wt *watch, fields Fields) {
	if !wt.started {
		wt.informer, wt.fields = w.newInformer(s, wt, fields), fields
		return
	}
	if wt.wider != nil {
		wt.wider.cancel()
	}
	ctx, cancel := context.WithCancel(w.ctx)
	next := &replacement{informer: w.newInformer(s, wt, fields), cancel: cancel, fields: fields}
	wt.wider = next
	w.opts.Log.Debug("widening watch", "scope", s.String())
	go next.informer.RunWithContext(ctx)
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), next.informer.HasSynced) {
			return
		}
		w.mu.Lock()
		if wt.wider != next || w.watches[s] != wt {
			w.mu.Unlock()
			return
		}
		wt.cancel()
		wt.informer, wt.cancel, wt.fields, wt.wider = next.informer, next.cancel, next.fields, nil
		w.mu.Unlock()
		wt.errMu.Lock()
		wt.lastErr = nil
		wt.errMu.Unlock()
		if w.opts.OnSynced != nil {
			w.opts.OnSynced(s, w.ownersOf(s))
		}
	}()
}

// start is called with w.mu held and w.ctx set.
func (w *Watcher) start(s Scope, wt *watch) {
	if wt.started {
		return
	}
	wt.started = true
	ctx, cancel := context.WithCancel(w.ctx)
	wt.cancel = cancel
	w.opts.Log.Debug("starting watch", "scope", s.String())
	informer := wt.informer
	go informer.RunWithContext(ctx)
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			return
		}
		wt.errMu.Lock()
		wt.lastErr = nil
		wt.errMu.Unlock()
		if w.opts.OnSynced != nil {
			w.opts.OnSynced(s, w.ownersOf(s))
		}
	}()
}

func eventHandler(s Scope, fn func(Scope, *unstructured.Unstructured, *unstructured.Unstructured)) cache.ResourceEventHandler {
	return handler.Funcs[*unstructured.Unstructured]{
		Add:    func(u *unstructured.Unstructured) { fn(s, nil, u) },
		Update: func(o, n *unstructured.Unstructured) { fn(s, o, n) },
		Delete: func(u *unstructured.Unstructured) { fn(s, u, nil) },
	}
}
