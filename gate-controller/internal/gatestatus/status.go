// Package gatestatus reconciles Gate objects: it evaluates the effective state from the spec and the
// time, records transitions, reports the objects a gate holds, and requeues a gate exactly when
// a window or override next changes it, never on a poll.
package gatestatus

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	gatelogic "github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/pkg/text"
)

// Outcome is what a new status means, for Events, metrics and the requeue.
type Outcome struct {
	// Transitioned is true when the effective state changed (or was first evaluated).
	Transitioned bool
	// OverrideExpired is true when an override expired since the last status.
	OverrideExpired bool
	// Requeue is how long until the state, reason or message can next change on their own;
	// zero when nothing will change without an edit.
	Requeue time.Duration
}

// Observed is what a gate's status depends on besides its spec and the time.
type Observed struct {
	// Held lists at most MaxHeld of the objects the gate holds; Holding is their full count.
	Held    []gatingv1alpha1.HeldObject
	Holding int
	// Cycle is the shortest cycle of gates, through this one, that name each other in
	// gating.sluice.dev/gates; nil when there is none.
	Cycle []gatelogic.Ref
}

// MaxMessage bounds status.message and the messages in history: a suspend reason copied into a
// message must not make the status too large to write, nor grow it each time it is copied.
const MaxMessage = 2048

// NextStatus computes the status of g at now. It never fails: a spec that cannot be evaluated
// closes the gate and reports Stalled, and so does a cycle of gates, whose references are ignored.
func NextStatus(g *gatingv1alpha1.Gate, now time.Time, obs Observed) (gatingv1alpha1.GateStatus, Outcome) {
	st := *g.Status.DeepCopy()
	var out Outcome
	gen := g.Generation
	st.ObservedGeneration = gen
	evaluated := conditions.Get(st.Conditions, gatingv1alpha1.ConditionOpen) != nil

	s := suspend.Get(g, g.Spec.Suspend)
	suspend.Report(&st.Conditions, gen, s)
	if s.Suspended {
		out.Transitioned = suspended(&st, gen, s, evaluated, now)
	} else {
		out = evaluate(&st, g, evaluated, now)
	}
	if obs.Cycle != nil {
		conditions.MarkStalled(&st.Conditions, gen, gatingv1alpha1.ReasonGateCycle, fmt.Sprintf(
			"%s in %s; a gate is never held by itself, so the gate-controller ignores these references: remove one of them",
			gatelogic.FormatCycle(obs.Cycle), gatelogic.GatesAnnotation))
	}
	st.Held = obs.Held
	st.Holding = int32(obs.Holding)
	var nextExpiry *time.Time
	st.Approvals, nextExpiry = gatelogic.ActiveApprovals(g.Spec.Approvals, g.Status.Approvals, now)
	st.Approved = gatelogic.SummarizeApprovals(st.Approvals)
	if nextExpiry != nil {
		// An approval that expires changes what the gate lets through: evaluate again then.
		if wait := max(nextExpiry.Sub(now), time.Millisecond); out.Requeue == 0 || wait < out.Requeue {
			out.Requeue = wait
		}
	}
	return st, out
}

// suspended keeps the state the gate had, and says why.
func suspended(st *gatingv1alpha1.GateStatus, gen int64, s suspend.State, evaluated bool, now time.Time) bool {
	open := evaluated && st.Open
	kept := "keeps the state it had"
	if !evaluated {
		kept = "was suspended before its first evaluation, so it is"
	}
	message := fmt.Sprintf("suspended (%s): %s, %s, until it is resumed", text.TruncateBytes(s.Message, gatelogic.MaxGateMessage), kept, stateOf(open))
	transitioned := setState(st, open, gatingv1alpha1.ReasonSuspended, message, evaluated, now)
	st.NextTransitionTime = nil
	// A suspended gate keeps reporting the readiness it last reached.
	if conditions.Get(st.Conditions, conditions.Ready) == nil {
		conditions.MarkReady(&st.Conditions, gen, gatingv1alpha1.ReasonSuspended, message)
	}
	return transitioned
}

// evaluate sets the state the spec gives at now.
func evaluate(st *gatingv1alpha1.GateStatus, g *gatingv1alpha1.Gate, evaluated bool, now time.Time) Outcome {
	var out Outcome
	gen := g.Generation
	d := gatelogic.Evaluate(g.Spec, now)
	out.Transitioned = setState(st, d.Open, d.Reason, d.Message, evaluated, now)
	st.NextTransitionTime = timePtr(d.NextTransition)
	if d.NextEvaluation != nil {
		out.Requeue = max(d.NextEvaluation.Sub(now), time.Millisecond)
	}
	if d.OverrideExpired {
		out.OverrideExpired = st.ExpiredOverride == nil || !st.ExpiredOverride.Until.Equal(&g.Spec.Override.Until)
		st.ExpiredOverride = g.Spec.Override.DeepCopy()
	} else {
		st.ExpiredOverride = nil
	}
	if err := gatelogic.ValidateSpec(g.Spec); err != nil {
		conditions.MarkStalled(&st.Conditions, gen, conditions.ReasonInvalidSpec,
			"the spec cannot be evaluated, so the gate stays closed until it is fixed: "+err.Error())
	} else {
		conditions.MarkReady(&st.Conditions, gen, conditions.ReasonSucceeded, withState(d.Open, st.Message))
	}
	return out
}

// withState leads a message with the state, unless it already does.
func withState(open bool, message string) string {
	state := stateOf(open)
	if strings.HasPrefix(message, state) {
		return message
	}
	return state + ": " + message
}

// setState sets the state and its Open condition, and adds a history entry when the state changes.
func setState(st *gatingv1alpha1.GateStatus, open bool, reason, message string, evaluated bool, now time.Time) bool {
	transitioned := !evaluated || st.Open != open
	message = text.TruncateBytes(message, MaxMessage)
	st.Open, st.Reason, st.Message = open, reason, message
	status := metav1.ConditionFalse
	if open {
		status = metav1.ConditionTrue
	}
	// The Open condition's generation is the status's: both describe the same evaluation.
	conditions.Set(&st.Conditions, st.ObservedGeneration, gatingv1alpha1.ConditionOpen, status, reason, message)
	if !transitioned {
		return false
	}
	at := metav1.NewTime(now)
	st.LastTransitionTime = &at
	entry := gatingv1alpha1.GateTransition{Time: at, State: gatingv1alpha1.StateClosed, Reason: reason, Message: message}
	if open {
		entry.State = gatingv1alpha1.StateOpen
	}
	st.History = append([]gatingv1alpha1.GateTransition{entry}, st.History...)
	if len(st.History) > gatingv1alpha1.MaxHistory {
		st.History = st.History[:gatingv1alpha1.MaxHistory]
	}
	return true
}

func stateOf(open bool) string {
	if open {
		return "open"
	}
	return "closed"
}

func timePtr(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	mt := metav1.NewTime(*t)
	return &mt
}

// RejectedStatus is the status that reports a rejected one: the gate closed (reason Invalid)
// and Stalled with the API server's words, built from the status that was rejected minus what
// came from the spec verbatim (the expired override), so it can be written.
func RejectedStatus(g *gatingv1alpha1.Gate, rejected gatingv1alpha1.GateStatus, why string, now time.Time) gatingv1alpha1.GateStatus {
	st := *rejected.DeepCopy()
	st.ExpiredOverride = nil
	st.NextTransitionTime = nil
	message := "the API server rejected the gate's status, so it stays closed until the spec is fixed: " + why
	evaluated := conditions.Get(g.Status.Conditions, gatingv1alpha1.ConditionOpen) != nil
	st.Open = g.Status.Open && evaluated
	setState(&st, false, gatingv1alpha1.ReasonInvalid, message, evaluated, now)
	conditions.MarkStalled(&st.Conditions, g.Generation, conditions.ReasonInvalidSpec, message)
	return st
}
