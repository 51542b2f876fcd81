package store

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listOf returns a kind's objects as T that the scope may list, sorted by namespace and name, so
// every page lists them in the same order.
func listOf[T metav1.Object](k *Kind) []T {
	objs := k.Informer.GetStore().List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok && k.mayList(t.GetNamespace()) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out
}
