package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	healthinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/health/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
)

var healthChecksResource = schema.GroupResource{Group: healthv1alpha1.GroupName, Resource: "healthchecks"}

func newHealthCheckInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return healthinformers.NewHealthCheckInformer(c, ns, 0, idx)
}

// HealthCheckList returns every HealthCheck, sorted by namespace and name.
func (s *Store) HealthCheckList() []*healthv1alpha1.HealthCheck {
	return listOf[*healthv1alpha1.HealthCheck](s.HealthChecks)
}

// HealthCheck returns the HealthCheck namespace/name, or nil.
func (s *Store) HealthCheck(namespace, name string) *healthv1alpha1.HealthCheck {
	obj, _ := s.HealthChecks.Get(namespace, name).(*healthv1alpha1.HealthCheck)
	return obj
}
