package scmobjects

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// BySecret indexes ScmProviders and ScmRepositories by the "namespace/name" of each Secret they
// name, so a Secret event finds its referrers without a scan.
const BySecret = "secret"

// SecretIndexers are the indexers to add to the ScmProvider and ScmRepository informers.
var SecretIndexers = cache.Indexers{BySecret: secretsOf}

func secretsOf(obj any) ([]string, error) {
	switch o := obj.(type) {
	case *scmv1alpha1.ScmProvider:
		var keys []string
		if ref := o.Spec.SecretRef; ref != nil {
			keys = append(keys, o.Namespace+"/"+ref.Name)
		}
		if b := o.Spec.CABundle; b != nil && b.Kind != "ConfigMap" && (o.Spec.SecretRef == nil || b.Name != o.Spec.SecretRef.Name) {
			keys = append(keys, o.Namespace+"/"+b.Name)
		}
		return keys, nil
	case *scmv1alpha1.ScmRepository:
		if a := o.Spec.Auth; a != nil {
			return []string{o.Namespace + "/" + a.SecretRef.Name}, nil
		}
	}
	return nil, nil
}

// Referrers returns the keys of the objects in indexer that name the Secret.
func Referrers(indexer cache.Indexer, secret metav1.Object) []string {
	objs, err := indexer.ByIndex(BySecret, handler.Key(secret))
	if err != nil {
		return nil
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok {
			keys = append(keys, handler.Key(m))
		}
	}
	return keys
}

// ProviderVerdictChanged reports whether what a ScmRepository reads from its ScmProvider changed:
// the spec, the annotations (suspend), or the Ready condition.
func ProviderVerdictChanged(before, after *scmv1alpha1.ScmProvider) bool {
	if before.Generation != after.Generation || !maps.Equal(before.Annotations, after.Annotations) {
		return true
	}
	a, b := conditions.Get(before.Status.Conditions, conditions.Ready), conditions.Get(after.Status.Conditions, conditions.Ready)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message || a.ObservedGeneration != b.ObservedGeneration
}
