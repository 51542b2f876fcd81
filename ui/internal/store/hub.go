package store

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// AnyKind is the change that concerns every page: a CRD came or went.
const AnyKind = "*"

// Hub tells each subscriber which kinds changed since it last looked, among the changes it may
// see. A subscriber that is slow (a browser on a poor link) never blocks the informers: its
// changes are merged into one set until it reads them, so a burst of writes costs it one update.
type Hub struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Change is a change to the object Name of Kind (its name in the UI) in Namespace; without a
// Name, to some object of Kind in Namespace. With Affects, it is that change as it concerns the
// pages that show what Affects names (keys.go): whoever may not see the object is not told it.
type Change struct {
	Kind, Namespace, Name string
	Affects               Key
}

// Subscription is one subscriber's pending changes.
type Subscription struct {
	// Ready receives a value when changes are pending; Take may still find none it may see.
	Ready   chan struct{}
	pending map[Change]struct{}
	visible func(Change) bool
	hub     *Hub
}

// NewHub returns a hub with no subscribers.
func NewHub() *Hub { return &Hub{subs: map[*Subscription]struct{}{}} }

// Subscribe adds a subscriber that is told the changes visible reports true for (nil: every
// change); call Close when done.
func (h *Hub) Subscribe(visible func(Change) bool) *Subscription {
	if visible == nil {
		visible = func(Change) bool { return true }
	}
	s := &Subscription{Ready: make(chan struct{}, 1), pending: map[Change]struct{}{}, visible: visible, hub: h}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Subscribers is the number of subscribers.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Notify records that an object of kind in namespace changed, for every subscriber.
func (h *Hub) Notify(kind, namespace string) { h.NotifyObject(kind, namespace, "") }

// NotifyObject records that the object namespace/name of kind changed, for every subscriber.
func (h *Hub) NotifyObject(kind, namespace, name string) {
	h.NotifyAffecting(kind, namespace, name, nil)
}

// NotifyAffecting records that the object namespace/name of kind changed, and that the change
// concerns what each of affects names, for every subscriber.
func (h *Hub) NotifyAffecting(kind, namespace, name string, affects []Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.pending[Change{Kind: kind, Namespace: namespace, Name: name}] = struct{}{}
		for _, k := range affects {
			s.pending[Change{Kind: kind, Namespace: namespace, Name: name, Affects: k}] = struct{}{}
		}
		select {
		case s.Ready <- struct{}{}:
		default:
		}
	}
}

// Take returns the kinds changed since the last Take that the subscriber may see, sorted, and
// forgets every pending change. It asks visible outside the hub's lock: the answer may need an
// access review.
func (s *Subscription) Take() []string {
	var out []string
	for _, c := range s.TakeChanges() {
		if !slices.Contains(out, c.Kind) {
			out = append(out, c.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// TakeChanges returns the changes since the last Take that the subscriber may see, and forgets
// every pending change. It asks visible outside the hub's lock: the answer may need an access
// review.
func (s *Subscription) TakeChanges() []Change {
	s.hub.mu.Lock()
	pending := make([]Change, 0, len(s.pending))
	for c := range s.pending {
		pending = append(pending, c)
	}
	clear(s.pending)
	s.hub.mu.Unlock()
	out := pending[:0]
	for _, c := range pending {
		if s.visible(c) {
			out = append(out, c)
		}
	}
	return out
}

// Close removes the subscriber.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	delete(s.hub.subs, s)
	s.hub.mu.Unlock()
}

// Subscribe subscribes to the changes of this store's scope: those of an object in a namespace
// where the scope may list its kind, or of an object it may get, and every CRD that came or
// went.
func (s *Store) Subscribe() *Subscription {
	if s.scope == nil {
		return s.Changes.Subscribe(nil)
	}
	resources := map[string]schema.GroupResource{EventKind: eventsResource}
	for _, k := range append(s.All(), s.Targets...) {
		resources[k.Name] = k.Resource
	}
	for _, k := range []*Kind{s.Agents.Kustomizations, s.Agents.GitRepositories, s.Agents.Applications} {
		if k != nil {
			resources[k.Name] = k.Resource
		}
	}
	scope := s.scope
	return s.Changes.Subscribe(func(c Change) bool {
		gr, ok := resources[c.Kind]
		if !ok {
			return c.Kind == AnyKind
		}
		return scope.MayList(gr, c.Namespace) || c.Name != "" && scope.MayGet(gr, c.Namespace, c.Name)
	})
}

// Reads returns the keys of what was read from this store: for a store of For, what one page
// shows (Reads.Keys).
func (s *Store) Reads() []Key { return s.reads.Keys() }

// nameOf is the name of an informer's object, a deleted one's too.
func nameOf(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		_, name, _ := cache.SplitMetaNamespaceKey(d.Key)
		return name
	}
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}

// namespaceOf is the namespace of an informer's object, a deleted one's too.
func namespaceOf(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		ns, _, _ := cache.SplitMetaNamespaceKey(d.Key)
		return ns
	}
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetNamespace()
	}
	return ""
}
