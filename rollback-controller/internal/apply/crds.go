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
// whether objects of their kind exist other than those of leaving, the objects the plan deletes
// before the CRD (one list call each, of as many items as leaving has of that kind, plus one).
// CRDs that do not exist are left out.
func (a *Applier) CRDStates(ctx context.Context, names []string, leaving []manifest.Ref) (map[string]manifest.CRDState, error) {
	going := map[string]bool{}
	for _, r := range leaving {
		going[r.ID()] = true
	}
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
			if state.Objects, state.Example, err = a.othersOf(ctx, gvr, crd, leaving, going); err != nil {
				return nil, fmt.Errorf("count the objects of CRD %s: %w", name, err)
			}
		}
		states[name] = state
	}
	return states, nil
}

// othersOf counts the objects of the CRD's kind that are not going, and names one. It lists one
// more item than going holds of that kind: when only those exist, the list holds them all.
func (a *Applier) othersOf(ctx context.Context, gvr schema.GroupVersionResource, crd *unstructured.Unstructured, leaving []manifest.Ref, going map[string]bool) (int, string, error) {
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	limit := int64(1)
	for _, r := range leaving {
		if r.Group == gvr.Group && r.Kind == kind {
			limit++
		}
	}
	list, err := a.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: limit})
	if err != nil {
		return 0, "", err
	}
	others := len(list.Items)
	if rest := list.GetRemainingItemCount(); rest != nil {
		others += int(*rest)
	}
	example := ""
	for i := range list.Items {
		item := &list.Items[i]
		if going[manifest.RefOf(item).ID()] {
			others--
			continue
		}
		if example == "" {
			example = item.GetName()
			if ns := item.GetNamespace(); ns != "" {
				example = ns + "/" + example
			}
		}
	}
	return others, example, nil
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
