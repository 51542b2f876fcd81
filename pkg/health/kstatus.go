package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Kstatus computes health with kstatus, for objects no check matches:
// Deployments, StatefulSets, Jobs and custom resources that follow the
// Ready/Reconciling/Stalled conventions.
func Kstatus(obj *unstructured.Unstructured) Result {
	res, err := status.Compute(obj)
	if err != nil {
		return Result{Status: Unknown, Message: "computing kstatus: " + err.Error()}
	}
	switch res.Status {
	case status.CurrentStatus:
		return Result{Status: Current, Message: res.Message}
	case status.FailedStatus:
		return Result{Status: Failed, Message: res.Message}
	case status.InProgressStatus:
		return Result{Status: InProgress, Message: res.Message}
	case status.TerminatingStatus:
		// Being deleted is a transition, not an outcome.
		return Result{Status: InProgress, Message: res.Message}
	case status.NotFoundStatus:
		return Result{Status: NotFound, Message: res.Message}
	default:
		return Result{Status: Unknown, Message: res.Message}
	}
}
