package store

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listOf returns a kind's objects as T that the scope may list, sorted by namespace and name, so
// every page lists them in the same order.
func listOf[T metav1.Object](k *Kind) []T {
	k.reads.add(KeyOf(k.Name, "", ""))
	objs := k.Informer.GetStore().List()
	if memo, ok := k.scope.(*memoScope); ok {
		namespaces := map[string]struct{}{}
		for _, o := range objs {
			if m, ok := o.(metav1.Object); ok {
				namespaces[m.GetNamespace()] = struct{}{}
			}
		}
		memo.listsIn(k.Resource, namespaces)
	}
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
