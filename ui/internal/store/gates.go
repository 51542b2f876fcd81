package store

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	gatinginformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/gating/v1alpha1"
)

var gatesResource = schema.GroupResource{Group: gatingv1alpha1.GroupName, Resource: "gates"}

func newGateInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return gatinginformers.NewGateInformer(c, ns, 0, idx)
}

// GateList returns every Gate, sorted by namespace and name, each naming only the held objects
// the scope may list.
func (s *Store) GateList() []*gatingv1alpha1.Gate {
	gates := listOf[*gatingv1alpha1.Gate](s.Gates)
	for i, g := range gates {
		gates[i] = s.withVisibleHeld(g)
	}
	return gates
}

// Gate returns the Gate namespace/name, or nil, naming only the held objects the scope may list.
func (s *Store) Gate(namespace, name string) *gatingv1alpha1.Gate {
	obj, _ := s.Gates.Get(namespace, name).(*gatingv1alpha1.Gate)
	if obj == nil {
		return nil
	}
	return s.withVisibleHeld(obj)
}

// withVisibleHeld returns g, or a copy of it without the held objects (status.held, which can
// name objects of other namespaces) that the scope may not list.
func (s *Store) withVisibleHeld(g *gatingv1alpha1.Gate) *gatingv1alpha1.Gate {
	if s.scope == nil {
		return g
	}
	var visible []gatingv1alpha1.HeldObject
	for _, h := range g.Status.Held {
		gvk := schema.FromAPIVersionAndKind(h.APIVersion, h.Kind)
		resource, _ := meta.UnsafeGuessKindToResource(gvk)
		if s.Gates.scope.MayList(resource.GroupResource(), h.Namespace) {
			visible = append(visible, h)
		}
	}
	if len(visible) == len(g.Status.Held) {
		return g
	}
	g = g.DeepCopy()
	g.Status.Held = visible
	return g
}
