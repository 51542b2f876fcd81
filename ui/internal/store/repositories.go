package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	scminformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

var repositoriesResource = schema.GroupResource{Group: scmv1alpha1.GroupName, Resource: "scmrepositories"}

func newRepositoryInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return scminformers.NewScmRepositoryInformer(c, ns, 0, idx)
}

// RepositoryList returns every ScmRepository, sorted by namespace and name.
func (s *Store) RepositoryList() []*scmv1alpha1.ScmRepository {
	return listOf[*scmv1alpha1.ScmRepository](s.Repositories)
}

// ScmRepository returns the ScmRepository namespace/name, or nil.
func (s *Store) ScmRepository(namespace, name string) *scmv1alpha1.ScmRepository {
	obj, _ := s.Repositories.Get(namespace, name).(*scmv1alpha1.ScmRepository)
	return obj
}
