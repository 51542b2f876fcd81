// Package holding watches the objects that reference gates and holds or releases them: a
// metadata-only cache per configured kind, an index from each gate to the objects that reference
// it, and the reconciler that applies what package hold decides.
package holding

import (
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/pkg/gate"
)

// Watched is a kind with its metadata-only cache.
type Watched struct {
	kinds.Kind
	Informer cache.SharedIndexInformer
}

// Registry holds the watched kinds. Kinds are added while the controller runs, when their CRDs
// are installed, so every method is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	kinds map[schema.GroupResource]*Watched
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{kinds: map[schema.GroupResource]*Watched{}}
}

// Add registers w; it reports false if its kind is already watched.
func (r *Registry) Add(w *Watched) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.kinds[w.GroupResource()]; ok {
		return false
	}
	r.kinds[w.GroupResource()] = w
	return true
}

// Get returns the watched kind gr.
func (r *Registry) Get(gr schema.GroupResource) (*Watched, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	w, ok := r.kinds[gr]
	return w, ok
}

// Has reports whether gr is watched.
func (r *Registry) Has(gr schema.GroupResource) bool {
	_, ok := r.Get(gr)
	return ok
}

// All returns the watched kinds.
func (r *Registry) All() []*Watched {
	r.mu.RLock()
	defer r.mu.RUnlock()
	all := make([]*Watched, 0, len(r.kinds))
	for _, w := range r.kinds {
		all = append(all, w)
	}
	return all
}

// Referencing returns the keys of the targets that reference the gate or are held by it.
func (r *Registry) Referencing(ref gate.Ref) []string {
	var keys []string
	for _, w := range r.All() {
		objs, err := w.Informer.GetIndexer().ByIndex(gatesIndex, ref.String())
		if err != nil {
			continue
		}
		for _, o := range objs {
			if m, ok := o.(metav1.Object); ok {
				keys = append(keys, Key(w.GroupResource(), m))
			}
		}
	}
	return keys
}

// GatesReferencingGates returns the keys of the Gates that are targets themselves: the only
// objects that can be part of a cycle of gates.
func (r *Registry) GatesReferencingGates() []string {
	var keys []string
	for _, w := range r.All() {
		if !isGate(w) {
			continue
		}
		for _, o := range w.Informer.GetStore().List() {
			if m, ok := o.(metav1.Object); ok {
				if _, refs := m.GetAnnotations()[gate.GatesAnnotation]; refs {
					keys = append(keys, Key(w.GroupResource(), m))
				}
			}
		}
	}
	return keys
}

// Held lists, sorted, the objects the gate holds now: those whose hold record names it. It
// returns at most limit objects and the full count. The records are read once per change of an
// object, by the heldIndex, not once per call: a gate closing over thousands of objects is
// evaluated again as each of them is held.
func (r *Registry) Held(ref gate.Ref, limit int) ([]gatingv1alpha1.HeldObject, int) {
	type sortable struct {
		key string
		obj gatingv1alpha1.HeldObject
	}
	var held []sortable
	for _, w := range r.All() {
		objs, err := w.Informer.GetIndexer().ByIndex(heldIndex, ref.String())
		if err != nil {
			continue
		}
		for _, o := range objs {
			if m, ok := o.(metav1.Object); ok {
				h := gatingv1alpha1.HeldObject{APIVersion: w.APIVersion(), Kind: w.Kind.Kind, Namespace: m.GetNamespace(), Name: m.GetName()}
				held = append(held, sortable{key: h.Kind + "/" + h.Namespace + "/" + h.Name, obj: h})
			}
		}
	}
	slices.SortFunc(held, func(a, b sortable) int { return strings.Compare(a.key, b.key) })
	out := make([]gatingv1alpha1.HeldObject, 0, min(len(held), limit))
	for _, h := range held[:min(len(held), limit)] {
		out = append(out, h.obj)
	}
	return out, len(held)
}

// heldRecord returns the controller's own hold record on m.
func heldRecord(m metav1.Object) (hold.Record, bool) {
	value, ok := m.GetAnnotations()[hold.RecordAnnotation]
	if !ok || !hold.OwnedFields(m.GetManagedFields()).Record {
		return hold.Record{}, false
	}
	rec, err := hold.ParseRecord(value)
	return rec, err == nil
}

// Key is the work-queue key of a target: "resource.group|namespace/name".
func Key(gr schema.GroupResource, m metav1.Object) string {
	name := m.GetName()
	if ns := m.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return gr.String() + "|" + name
}

// SplitKey reverses Key.
func SplitKey(key string) (schema.GroupResource, string, bool) {
	gr, name, ok := strings.Cut(key, "|")
	if !ok {
		return schema.GroupResource{}, "", false
	}
	return schema.ParseGroupResource(gr), name, true
}

// The informers' indexes: gatesIndex finds the objects a gate must re-check, heldIndex the ones
// it holds now.
const (
	gatesIndex = "gates"
	heldIndex  = "held"
)

// Indexers are the indexes every target informer carries.
var Indexers = cache.Indexers{gatesIndex: indexByGate, heldIndex: indexByHolder}

// indexByHolder indexes a target under every gate its own, not yielded, hold record names.
func indexByHolder(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	rec, ok := heldRecord(m)
	if !ok || rec.Yielded {
		return nil, nil
	}
	return rec.Gates, nil
}

// indexByGate indexes a target under every gate it references and every gate its hold record
// names, so a gate finds the objects it must re-check and the ones it still holds.
func indexByGate(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	var names []string
	if value, ok := m.GetAnnotations()[gate.GatesAnnotation]; ok {
		// An unreadable annotation references nothing; the target's reconcile reports it.
		refs, _ := gate.ParseRefs(value, m.GetNamespace())
		for _, ref := range refs {
			names = append(names, ref.String())
		}
	}
	if rec, ok := heldRecord(m); ok {
		names = append(names, rec.Gates...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// gatesOf is what indexByGate indexes m under, as gate refs.
func gatesOf(m metav1.Object) []gate.Ref {
	names, _ := indexByGate(m)
	refs := make([]gate.Ref, 0, len(names))
	for _, n := range names {
		ns, name, _ := strings.Cut(n, "/")
		refs = append(refs, gate.Ref{Namespace: ns, Name: name})
	}
	return refs
}

// isTarget reports whether the controller has anything to do with m: it references gates or
// carries a hold of the controller's.
func isTarget(m metav1.Object) bool {
	annotations := m.GetAnnotations()
	_, refs := annotations[gate.GatesAnnotation]
	_, record := annotations[hold.RecordAnnotation]
	return refs || record || hold.OwnedFields(m.GetManagedFields()) != (hold.Owned{})
}
