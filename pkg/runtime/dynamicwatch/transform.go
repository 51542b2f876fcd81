package dynamicwatch

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// LastAppliedAnnotation is kubectl's copy of the whole last applied manifest.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripManagedFields drops metadata.managedFields and kubectl's last-applied-configuration
// annotation before an object is cached. Both are bookkeeping for writers, often larger than the
// rest of the object, and useless to a reader of state.
func StripManagedFields(obj any) (any, error) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		stripped, err := StripManagedFields(tombstone.Obj)
		return cache.DeletedFinalStateUnknown{Key: tombstone.Key, Obj: stripped}, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	meta, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return obj, nil
	}
	delete(meta, "managedFields")
	if annotations, ok := meta["annotations"].(map[string]any); ok {
		delete(annotations, LastAppliedAnnotation)
		if len(annotations) == 0 {
			delete(meta, "annotations")
		}
	}
	return u, nil
}

// KeepAll stores objects as they come, for comparison with StripManagedFields.
func KeepAll(obj any) (any, error) { return obj, nil }
