package manifest

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CRDState is what the cluster says about one CRD, keyed by its name (<plural>.<group>).
type CRDState struct {
	// StoredVersions is the live CRD's status.storedVersions.
	StoredVersions []string
	// Objects is how many objects of the CRD's kind exist other than those the plan deletes
	// before it (its own instances go first), and Example names one.
	Objects int
	Example string
}

// Blocker is a change that would lose data, with what a person must do instead.
type Blocker struct {
	Object  Ref
	Reason  string
	Message string
}

// Reasons of Blockers.
const (
	ReasonCRDHasObjects        = "CRDStillHasObjects"
	ReasonStoredVersionDropped = "StoredVersionDropped"
)

// CRDsToInspect returns the names of the CRDs whose live state CheckCRDs needs: those the plan
// applies and those it deletes.
func CRDsToInspect(desired []*unstructured.Unstructured, stale []Ref) []string {
	var names []string
	for _, obj := range desired {
		if RefOf(obj).IsCRD() {
			names = append(names, obj.GetName())
		}
	}
	for _, r := range stale {
		if r.IsCRD() {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// CheckCRDs returns what would lose data if desired were applied and stale deleted, given the
// live state of the CRDs (those not in live do not exist). action says what the plan is for
// people, such as `upgrade to v2` or `rollback to snapshot 3`.
func CheckCRDs(action string, desired []*unstructured.Unstructured, stale []Ref, live map[string]CRDState) []Blocker {
	var blockers []Blocker
	for _, obj := range desired {
		ref := RefOf(obj)
		state, exists := live[obj.GetName()]
		if !ref.IsCRD() || !exists {
			continue
		}
		if dropped := droppedStoredVersions(obj, state.StoredVersions); len(dropped) > 0 {
			blockers = append(blockers, Blocker{Object: ref, Reason: ReasonStoredVersionDropped, Message: fmt.Sprintf(
				"%s would remove version %s of CRD %s, which is still in its status.storedVersions: objects may be stored in it. "+
					"Migrate them to a version this release keeps (read and write each one, e.g. with kube-storage-version-migrator), "+
					"then remove %s from status.storedVersions with `kubectl patch crd %s --subresource=status --type=merge -p '{\"status\":{\"storedVersions\":[...]}}'`, "+
					"or keep the version in the manifests",
				action, strings.Join(dropped, ", "), obj.GetName(), strings.Join(dropped, ", "), obj.GetName())})
		}
	}
	for _, ref := range stale {
		state, exists := live[ref.Name]
		if !ref.IsCRD() || !exists || state.Objects == 0 {
			continue
		}
		blockers = append(blockers, Blocker{Object: ref, Reason: ReasonCRDHasObjects, Message: fmt.Sprintf(
			"%s would delete CRD %s, and with it its %d objects (such as %s). "+
				"Delete or move them first (`kubectl get %s -A`), or keep the CRD in the manifests",
			action, ref.Name, state.Objects, state.Example, ref.Name)})
	}
	return blockers
}

func droppedStoredVersions(crd *unstructured.Unstructured, stored []string) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	kept := map[string]bool{}
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok {
			if name, ok := m["name"].(string); ok {
				kept[name] = true
			}
		}
	}
	var dropped []string
	for _, v := range stored {
		if !kept[v] {
			dropped = append(dropped, v)
		}
	}
	return dropped
}

// CRDNames is what a CRD of a plan says about its kind, for the objects of that kind in the same
// plan, before the cluster serves it.
type CRDNames struct {
	Group, Kind, Plural string
	Namespaced          bool
}

// CRDNamesOf lists the kinds the CRDs among objs define.
func CRDNamesOf(objs []*unstructured.Unstructured) []CRDNames {
	var out []CRDNames
	for _, obj := range objs {
		if !RefOf(obj).IsCRD() {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		out = append(out, CRDNames{Group: group, Kind: kind, Plural: plural, Namespaced: scope == "Namespaced"})
	}
	return out
}
