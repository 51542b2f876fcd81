package manifest

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Inventory returns the Refs of objects, in apply order.
func Inventory(objs []*unstructured.Unstructured) []Ref {
	refs := make([]Ref, len(objs))
	for i, obj := range objs {
		refs[i] = RefOf(obj)
	}
	slices.SortStableFunc(refs, compare)
	return refs
}

// Stale returns the objects of previous that current does not have, in prune order: the
// reverse of apply order, so webhooks go first and CRDs and Namespaces last.
func Stale(previous, current []Ref) []Ref {
	keep := make(map[string]bool, len(current))
	for _, r := range current {
		keep[r.ID()] = true
	}
	var stale []Ref
	for _, r := range previous {
		if !keep[r.ID()] {
			stale = append(stale, r)
		}
	}
	slices.SortStableFunc(stale, func(a, b Ref) int { return compare(b, a) })
	return stale
}
