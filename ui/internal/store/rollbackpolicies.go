package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

var rollbackPoliciesResource = schema.GroupResource{Group: rollbackv1alpha1.GroupName, Resource: "rollbackpolicies"}

func newRollbackPolicyInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return rollbackinformers.NewRollbackPolicyInformer(c, ns, 0, idx)
}

// RollbackPolicyList returns every RollbackPolicy, sorted by namespace and name.
func (s *Store) RollbackPolicyList() []*rollbackv1alpha1.RollbackPolicy {
	return listOf[*rollbackv1alpha1.RollbackPolicy](s.RollbackPolicies)
}

// RollbackPolicy returns the RollbackPolicy namespace/name, or nil.
func (s *Store) RollbackPolicy(namespace, name string) *rollbackv1alpha1.RollbackPolicy {
	obj, _ := s.RollbackPolicies.Get(namespace, name).(*rollbackv1alpha1.RollbackPolicy)
	return obj
}
