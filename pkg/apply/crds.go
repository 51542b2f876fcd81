package apply

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/pkg/manifest"
)

// CRDStates reads what manifest.CheckCRDs needs about the named CRDs: their stored versions and
// whether objects of their kind exist (one list call of at most one item each). CRDs that do not
// exist are left out.
func (a *Applier) CRDStates(ctx context.Context, names []string) (map[string]manifest.CRDState, error) {
	states := map[string]manifest.CRDState{}
	for _, name := range names {
		crd, err := a.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read CRD %s: %w", name, err)
		}
		stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
		state := manifest.CRDState{StoredVersions: stored}
		if gvr, ok := servedResource(crd); ok {
			list, err := a.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return nil, fmt.Errorf("count the objects of CRD %s: %w", name, err)
			}
			if n := len(list.Items); n > 0 {
				state.Objects = n
				if rest := list.GetRemainingItemCount(); rest != nil {
					state.Objects += int(*rest)
				}
				item := list.Items[0]
				state.Example = item.GetName()
				if ns := item.GetNamespace(); ns != "" {
					state.Example = ns + "/" + state.Example
				}
			}
		}
		states[name] = state
	}
	return states, nil
}

// servedResource is the resource of a CRD at a version it serves.
func servedResource(crd *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if ok && m["served"] == true {
			if name, ok := m["name"].(string); ok {
				return schema.GroupVersionResource{Group: group, Version: name, Resource: plural}, true
			}
		}
	}
	return schema.GroupVersionResource{}, false
}
