package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatusinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/commitstatus/v1alpha1"
)

var commitStatusesResource = schema.GroupResource{Group: commitstatusv1alpha1.GroupName, Resource: "commitstatuses"}

func newCommitStatusInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return commitstatusinformers.NewCommitStatusInformer(c, ns, 0, idx)
}

// CommitStatusList returns every CommitStatus, sorted by namespace and name.
func (s *Store) CommitStatusList() []*commitstatusv1alpha1.CommitStatus {
	return listOf[*commitstatusv1alpha1.CommitStatus](s.CommitStatuses)
}

// CommitStatus returns the CommitStatus namespace/name, or nil.
func (s *Store) CommitStatus(namespace, name string) *commitstatusv1alpha1.CommitStatus {
	obj, _ := s.CommitStatuses.Get(namespace, name).(*commitstatusv1alpha1.CommitStatus)
	return obj
}
