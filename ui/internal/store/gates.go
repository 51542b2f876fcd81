package store

import (
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

// GateList returns every Gate, sorted by namespace and name.
func (s *Store) GateList() []*gatingv1alpha1.Gate { return listOf[*gatingv1alpha1.Gate](s.Gates) }

// Gate returns the Gate namespace/name, or nil.
func (s *Store) Gate(namespace, name string) *gatingv1alpha1.Gate {
	obj, _ := s.Gates.Get(namespace, name).(*gatingv1alpha1.Gate)
	return obj
}
