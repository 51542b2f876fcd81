// Package readiness is what the ScmProvider and ScmRepository reconcilers share: their status is
// a verdict on the spec and the credentials it names. Ready when they are usable, Stalled with a
// reason and a message a person can act on when they are not. A check reads what the cluster
// holds; it never calls the SCM or the git server, so it spends none of their API quota.
package readiness

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// FieldManager writes ScmProvider and ScmRepository status; the same name as for CommitStatus
// status, since one controller owns all three.
const FieldManager = "commitstatus-controller"

// DefaultRecheckInterval is how often an object waiting on something without events is looked at again.
const DefaultRecheckInterval = time.Minute

// ReasonValid: the spec and the credentials it names are usable.
const ReasonValid = "Valid"

// State is the kind of verdict.
type State int

const (
	// StateReady: usable.
	StateReady State = iota
	// StateStalled needs a person; an event on the object or what it names brings it back.
	StateStalled
	// StateWaiting ends on its own, with an event on a referenced object.
	StateWaiting
	// StateNotReady is neither progress nor a person's problem: a transient error (Err is set,
	// and the queue retries with backoff), or a suspended referenced object.
	StateNotReady
)

// Verdict is what a check found.
type Verdict struct {
	State   State
	Reason  string
	Message string
	// Recheck is set when the fix lies where no event reaches the controller (a Secret that is
	// not watched, a ConfigMap, RBAC): the object is looked at again after the recheck interval.
	Recheck bool
	// Err is the transient error of StateNotReady, if any.
	Err error
}

// Ready is a usable object's verdict.
func Ready(message string) Verdict {
	return Verdict{State: StateReady, Reason: ReasonValid, Message: message}
}

// Stalled is the verdict on what a person must fix.
func Stalled(reason, message string) Verdict {
	return Verdict{State: StateStalled, Reason: reason, Message: message}
}

// Apply writes the verdict into the kstatus conditions.
func (v Verdict) Apply(conds *[]metav1.Condition, generation int64) {
	switch v.State {
	case StateReady:
		conditions.MarkReady(conds, generation, v.Reason, v.Message)
	case StateStalled:
		conditions.MarkStalled(conds, generation, v.Reason, v.Message)
	case StateWaiting:
		conditions.MarkReconciling(conds, generation, v.Reason, v.Message)
	default:
		conditions.MarkNotReady(conds, generation, v.Reason, v.Message)
	}
}

// Result tells the queue when to look again: with backoff after a transient error, after the
// recheck interval when no event would come, otherwise only on the next event.
func (v Verdict) Result(recheck time.Duration) (controller.Result, error) {
	switch {
	case v.Err != nil:
		return controller.Result{}, v.Err
	case v.Recheck:
		if recheck <= 0 {
			recheck = DefaultRecheckInterval
		}
		return controller.Result{RequeueAfter: recheck}, nil
	}
	return controller.Result{}, nil
}
