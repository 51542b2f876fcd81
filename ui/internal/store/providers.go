package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	scminformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

var providersResource = schema.GroupResource{Group: scmv1alpha1.GroupName, Resource: "scmproviders"}

func newProviderInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return scminformers.NewScmProviderInformer(c, ns, 0, idx)
}

// ProviderList returns every ScmProvider, sorted by namespace and name.
func (s *Store) ProviderList() []*scmv1alpha1.ScmProvider {
	return listOf[*scmv1alpha1.ScmProvider](s.Providers)
}

// ScmProvider returns the ScmProvider namespace/name, or nil.
func (s *Store) ScmProvider(namespace, name string) *scmv1alpha1.ScmProvider {
	obj, _ := s.Providers.Get(namespace, name).(*scmv1alpha1.ScmProvider)
	return obj
}
