package holding

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
)

// specFieldKept checks, on the object the API server returned from a hold, that the kind's spec
// field is there with its held value. A CRD that does not declare the field (an Argo CD older
// than 3.1 has no spec.syncPolicy.automated.enabled) has it pruned without an error, even with
// strict field validation, while managedFields still list it as the controller's: the hold would
// look in place and never be. The error names the field, so the HoldFailed Event says what to
// upgrade.
func specFieldKept(w *Watched, plan hold.Plan, applied *unstructured.Unstructured) error {
	if !plan.Desired.Spec() || applied == nil {
		return nil
	}
	field := hold.SpecFieldOf(w.GVR.GroupVersion().WithKind(w.Kind.Kind).GroupKind())
	value, found, err := unstructured.NestedBool(applied.Object, append([]string{"spec"}, field.Path...)...)
	if err == nil && found && value == field.Held {
		return nil
	}
	return fmt.Errorf("the API server dropped %s from the hold: the %s CRD does not declare it, so the object is not held (for an Argo CD Application, Argo CD 3.1 or later is needed)", field.Name, w.GroupResource())
}
