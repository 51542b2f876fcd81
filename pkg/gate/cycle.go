package gate

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// RefsOf returns the gates that a gate references through its own GatesAnnotation: a Gate can be
// a target like any Sluice object. It returns nil for a gate that does not exist, references
// none, or whose annotation cannot be read.
type RefsOf func(Ref) []Ref

// RefsFrom reads the references of gates found by lookup, such as a lister's.
func RefsFrom(lookup func(namespace, name string) (*gatingv1alpha1.Gate, error)) RefsOf {
	return func(r Ref) []Ref {
		g, err := lookup(r.Namespace, r.Name)
		if err != nil || g == nil {
			return nil
		}
		return RefsOfObject(g)
	}
}

// RefsOfObject reads the GatesAnnotation of obj, ignoring an annotation that cannot be read.
func RefsOfObject(obj metav1.Object) []Ref {
	value, ok := obj.GetAnnotations()[GatesAnnotation]
	if !ok {
		return nil
	}
	refs, _ := ParseRefs(value, obj.GetNamespace())
	return refs
}

// maxCycleSearch bounds the gates a cycle search visits.
const maxCycleSearch = 10000

// Path returns the shortest chain of gate references from `from` to `to`, both included, or nil
// when from does not lead to to. A gate that leads back to a target gate must never hold it: that
// target would be held by itself.
func Path(from, to Ref, refsOf RefsOf) []Ref {
	parent := map[Ref]Ref{from: from}
	queue := []Ref{from}
	for len(queue) > 0 && len(parent) <= maxCycleSearch {
		at := queue[0]
		queue = queue[1:]
		if at == to {
			var path []Ref
			for r := at; ; r = parent[r] {
				path = append(path, r)
				if r == from {
					break
				}
			}
			for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
				path[i], path[j] = path[j], path[i]
			}
			return path
		}
		for _, next := range refsOf(at) {
			if _, seen := parent[next]; !seen {
				parent[next] = at
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// Cycle returns the shortest cycle of references through g, from g back to g, or nil. A gate
// that names itself is a cycle of one reference: [g, g].
func Cycle(g Ref, refsOf RefsOf) []Ref {
	var shortest []Ref
	for _, next := range refsOf(g) {
		if p := Path(next, g, refsOf); p != nil && (shortest == nil || len(p) < len(shortest)) {
			shortest = p
		}
	}
	if shortest == nil {
		return nil
	}
	return append([]Ref{g}, shortest...)
}

// Acyclic drops from refs, the gates a gate target self references, those that lead back to
// self: self would be held by itself. It returns the refs kept and the cycles found.
func Acyclic(self Ref, refs []Ref, refsOf RefsOf) (kept []Ref, cycles [][]Ref) {
	for _, r := range refs {
		if p := Path(r, self, refsOf); p != nil {
			cycles = append(cycles, append([]Ref{self}, p...))
			continue
		}
		kept = append(kept, r)
	}
	return kept, cycles
}

// FormatCycle writes a cycle as "ns/a -> ns/b -> ns/a", and a gate that names itself as such.
func FormatCycle(cycle []Ref) string {
	if len(cycle) == 2 && cycle[0] == cycle[1] {
		return fmt.Sprintf("gate %s names itself", cycle[0])
	}
	names := make([]string, len(cycle))
	for i, r := range cycle {
		names[i] = r.String()
	}
	return "gates " + strings.Join(names, " -> ")
}
