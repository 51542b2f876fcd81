// Package suspend implements RFC-0006 suspend-with-a-reason: an object is suspended when its
// spec.suspend is true or when it carries the annotation reconcile.fluxcd.io/suspended, whose
// value is the human reason. The annotation is metadata, so setting it never bumps generation.
package suspend

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/conditions"
)

// Annotation is the RFC-0006 key, shared with Flux so one `suspend` vocabulary covers both.
const Annotation = "reconcile.fluxcd.io/suspended"

// Reasons reported in the Suspended condition.
const (
	ReasonAnnotation = "SuspendedByAnnotation"
	ReasonSpec       = "SuspendedBySpec"
)

// State says whether an object is suspended, by what, and why.
type State struct {
	Suspended bool
	// Reason is ReasonSpec or ReasonAnnotation.
	Reason string
	// Message is the annotation's value, or a default sentence when there is none.
	Message string
}

// Get reads the suspend state. specSuspend is the object's spec.suspend. When both forms are
// present the annotation wins, because it is the one that can carry a reason.
func Get(obj metav1.Object, specSuspend bool) State {
	if value, ok := obj.GetAnnotations()[Annotation]; ok {
		msg := value
		if msg == "" {
			msg = "suspended by the " + Annotation + " annotation (no reason given)"
		}
		return State{Suspended: true, Reason: ReasonAnnotation, Message: msg}
	}
	if specSuspend {
		return State{Suspended: true, Reason: ReasonSpec, Message: "suspended by spec.suspend"}
	}
	return State{}
}

// Reason returns the annotation's value and whether the annotation is present.
func Reason(obj metav1.Object) (string, bool) {
	v, ok := obj.GetAnnotations()[Annotation]
	return v, ok
}

// Set adds the annotation with a reason. It mutates obj: callers pass a copy.
func Set(obj metav1.Object, reason string) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[Annotation] = reason
	obj.SetAnnotations(annotations)
}

// Unset removes the annotation. It mutates obj: callers pass a copy.
func Unset(obj metav1.Object) {
	annotations := obj.GetAnnotations()
	if _, ok := annotations[Annotation]; !ok {
		return
	}
	delete(annotations, Annotation)
	obj.SetAnnotations(annotations)
}

// Report writes the Suspended condition for s, or removes it when not suspended. It leaves Ready
// alone: a suspended object keeps reporting the last state it reached.
func Report(conds *[]metav1.Condition, generation int64, s State) {
	if !s.Suspended {
		conditions.Remove(conds, conditions.Suspended)
		return
	}
	conditions.Set(conds, generation, conditions.Suspended, metav1.ConditionTrue, s.Reason, s.Message)
}
