package view

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// Target is an object that references a gate, as a gate's page lists it.
type Target struct {
	Kind, Namespace, Name string
	// Held is true while the gate-controller holds it: its hold record and the suspend
	// annotation are both on it.
	Held bool
	// Suspended is true while it carries the suspend annotation, held by gates or by a person.
	Suspended bool
	// Reason is the suspend annotation's value.
	Reason string
}

// GateTarget reads what a gate's page shows of obj, an object of kind that references the gate.
func GateTarget(kind string, obj metav1.Object) Target {
	reason, suspended := suspend.Reason(obj)
	_, recorded := obj.GetAnnotations()[gate.HoldAnnotation]
	return Target{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Held: recorded && suspended, Suspended: suspended, Reason: reason}
}

// Approvable reports whether a gate can let the revision the target would apply through by an
// approval: the gate-controller matches approvals to the artifact revision of the Flux source a
// Kustomization or a HelmRelease applies. An Argo CD Application has no such source (the
// gate-controller holds it until its gates open), nor has a Flux source or automation.
func (t Target) Approvable() bool { return t.Kind == "Kustomization" || t.Kind == "HelmRelease" }

// SortTargets orders targets by kind, namespace and name, so the list stays put as it updates.
func SortTargets(targets []Target) {
	slices.SortFunc(targets, func(a, b Target) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
