package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

var manifestReleasesResource = schema.GroupResource{Group: rollbackv1alpha1.GroupName, Resource: "manifestreleases"}

func newManifestReleaseInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return rollbackinformers.NewManifestReleaseInformer(c, ns, 0, idx)
}

// ManifestReleaseList returns every ManifestRelease, sorted by namespace and name.
func (s *Store) ManifestReleaseList() []*rollbackv1alpha1.ManifestRelease {
	return listOf[*rollbackv1alpha1.ManifestRelease](s.ManifestReleases)
}

// ManifestRelease returns the ManifestRelease namespace/name, or nil.
func (s *Store) ManifestRelease(namespace, name string) *rollbackv1alpha1.ManifestRelease {
	obj, _ := s.ManifestReleases.Get(namespace, name).(*rollbackv1alpha1.ManifestRelease)
	return obj
}
