package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

var revertCommitsResource = schema.GroupResource{Group: rollbackv1alpha1.GroupName, Resource: "revertcommits"}

func newRevertCommitInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return rollbackinformers.NewRevertCommitInformer(c, ns, 0, idx)
}

// RevertCommitList returns every RevertCommit, sorted by namespace and name.
func (s *Store) RevertCommitList() []*rollbackv1alpha1.RevertCommit {
	return listOf[*rollbackv1alpha1.RevertCommit](s.RevertCommits)
}

// RevertCommit returns the RevertCommit namespace/name, or nil.
func (s *Store) RevertCommit(namespace, name string) *rollbackv1alpha1.RevertCommit {
	obj, _ := s.RevertCommits.Get(namespace, name).(*rollbackv1alpha1.RevertCommit)
	return obj
}
