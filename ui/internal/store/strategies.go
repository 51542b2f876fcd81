package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

var strategiesResource = schema.GroupResource{Group: promoterv1alpha1.GroupName, Resource: "promotionstrategies"}

func newStrategyInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return promoterinformers.NewPromotionStrategyInformer(c, ns, 0, idx)
}

// StrategyList returns every PromotionStrategy, sorted by namespace and name.
func (s *Store) StrategyList() []*promoterv1alpha1.PromotionStrategy {
	return listOf[*promoterv1alpha1.PromotionStrategy](s.Strategies)
}

// PromotionStrategy returns the PromotionStrategy namespace/name, or nil.
func (s *Store) PromotionStrategy(namespace, name string) *promoterv1alpha1.PromotionStrategy {
	obj, _ := s.Strategies.Get(namespace, name).(*promoterv1alpha1.PromotionStrategy)
	return obj
}
