// Package conditions writes kstatus-compatible conditions: Ready is the summary, and Reconciling
// and Stalled are abnormal-true conditions that are present only while they apply. With this shape
// `kubectl wait --for=condition=Ready` works and kstatus computes Sluice objects correctly.
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/text"
)

// Condition types shared by every Sluice kind.
const (
	Ready       = "Ready"
	Reconciling = "Reconciling"
	Stalled     = "Stalled"
	Suspended   = "Suspended"
)

// Reasons shared by every Sluice kind.
const (
	ReasonSucceeded   = "Succeeded"
	ReasonProgressing = "Progressing"
	ReasonInvalidSpec = "InvalidSpec"
)

// MarkReady records success: Ready=True, and neither Reconciling nor Stalled.
func MarkReady(conds *[]metav1.Condition, generation int64, reason, message string) {
	set(conds, generation, Ready, metav1.ConditionTrue, reason, message)
	meta.RemoveStatusCondition(conds, Reconciling)
	meta.RemoveStatusCondition(conds, Stalled)
}

// MarkReconciling records work in progress that is expected to finish on its own.
func MarkReconciling(conds *[]metav1.Condition, generation int64, reason, message string) {
	set(conds, generation, Reconciling, metav1.ConditionTrue, reason, message)
	set(conds, generation, Ready, metav1.ConditionFalse, reason, message)
	meta.RemoveStatusCondition(conds, Stalled)
}

// MarkStalled records an error that retrying cannot fix, typically invalid input. The message must
// tell a person what to change.
func MarkStalled(conds *[]metav1.Condition, generation int64, reason, message string) {
	set(conds, generation, Stalled, metav1.ConditionTrue, reason, message)
	set(conds, generation, Ready, metav1.ConditionFalse, reason, message)
	meta.RemoveStatusCondition(conds, Reconciling)
}

// MarkNotReady records a failure that will be retried, such as an unreachable peer.
func MarkNotReady(conds *[]metav1.Condition, generation int64, reason, message string) {
	set(conds, generation, Ready, metav1.ConditionFalse, reason, message)
	meta.RemoveStatusCondition(conds, Reconciling)
	meta.RemoveStatusCondition(conds, Stalled)
}

// Set writes any other condition, such as a domain condition like Open.
func Set(conds *[]metav1.Condition, generation int64, conditionType string, status metav1.ConditionStatus, reason, message string) {
	set(conds, generation, conditionType, status, reason, message)
}

// Remove deletes a condition if present.
func Remove(conds *[]metav1.Condition, conditionType string) {
	meta.RemoveStatusCondition(conds, conditionType)
}

// IsTrue reports whether the condition is present and True.
func IsTrue(conds []metav1.Condition, conditionType string) bool {
	return meta.IsStatusConditionTrue(conds, conditionType)
}

// Get returns the condition, or nil.
func Get(conds []metav1.Condition, conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(conds, conditionType)
}

func set(conds *[]metav1.Condition, generation int64, conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		ObservedGeneration: generation,
		Reason:             reason,
		Message:            text.Truncate(message, maxMessage),
	})
}

// maxMessage stays well under the API's limit of 32768 characters on a condition message.
const maxMessage = 4096
