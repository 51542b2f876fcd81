package healthcheck

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/pkg/text"
)

// decision is what one reconcile does, decided from its observation alone.
type decision struct {
	// Status is the HealthCheck's new status, written once the CommitStatus is.
	Status healthv1alpha1.HealthCheckStatus
	// Release stops the watches of a HealthCheck that is no longer evaluated.
	Release bool
	Publish publication
	// Announce is made once the status write landed.
	Announce     announcements
	RequeueAfter time.Duration
	// Err is returned once the status is written: a stall's cause, or a read to retry.
	Err error
}

// announcements are the Events, log line and metrics of what a status write records.
type announcements struct {
	// Published is the Event of a new CommitStatus verdict; Events are the others.
	Published *event
	Events    []event
	// Changed is the verdict's transition, logged; nil when the verdict stayed.
	Changed *change
	State   string
	// Counts are the verdict's counts; nil when nothing was evaluated.
	Counts *healthv1alpha1.HealthCounts
	// CompileError counts a stall on bad CEL.
	CompileError bool
	// Evaluation is the evaluation made, for its duration and error metrics; nil when none.
	Evaluation *evaluation
}

type event struct {
	Type, Reason, Message string
}

// change is a new verdict, or the verdict for a new revision.
type change struct {
	State             State
	Revision, Summary string
}

// decide turns an observation into the HealthCheck's new status, the CommitStatus to publish
// and what to announce. It reads nothing and writes nothing.
func decide(o *observation) decision {
	hc := o.HealthCheck
	d := decision{Status: *hc.Status.DeepCopy()}
	suspend.Report(&d.Status.Conditions, hc.Generation, o.Suspend)
	switch {
	case o.Suspend.Suspended:
		decideSuspended(&d, hc, o.Suspend)
	case o.Stalled != nil:
		decideStalled(&d, hc, *o.Stalled)
	case o.Waiting:
		decideWaiting(&d, hc, o.WaitingFor)
	default:
		decideHealth(&d, hc, o.Evaluated)
	}
	return d
}

// decideSuspended reports a suspended HealthCheck. Its health is not evaluated, so it is not
// called healthy: a HEALTHY true from before the suspension would be stale.
func decideSuspended(d *decision, hc *healthv1alpha1.HealthCheck, s suspend.State) {
	d.Release = true
	st := &d.Status
	gen := hc.Generation
	st.ObservedGeneration = gen
	st.Healthy = false
	st.Summary = healthv1alpha1.SummarySuspended
	// The soak and timeout clocks start over once it is resumed: nothing was observed meanwhile.
	st.HealthySince, st.UnhealthySince = nil, nil
	msg := "suspended (" + text.TruncateBytes(s.Message, 512) + "): health is not evaluated until it is resumed"
	if st.LastHealthyTime != nil {
		msg += "; last healthy at " + st.LastHealthyTime.UTC().Format(time.RFC3339)
		if st.LastHealthyRevision != "" {
			msg += " for revision " + st.LastHealthyRevision
		}
	}
	conditions.Set(&st.Conditions, gen, conditions.Ready, metav1.ConditionUnknown, stateSuspended, msg)
	conditions.Remove(&st.Conditions, conditions.Reconciling)
	conditions.Remove(&st.Conditions, conditions.Stalled)
	d.Announce.State = stateSuspended
}

// decideStalled reports input a person must fix. Retrying cannot help; a change to the
// HealthCheck or to the user library enqueues it again. A refusal of the ServiceAccount's rights
// is asked again after AccessRecheck, as RBAC is not watched.
func decideStalled(d *decision, hc *healthv1alpha1.HealthCheck, p problem) {
	before := hc.Status.Conditions
	msg := p.Cause.Error()
	if c := conditions.Get(before, conditions.Stalled); c == nil || c.Reason != p.Reason || c.Message != msg {
		d.Announce.Events = append(d.Announce.Events, event{corev1.EventTypeWarning, p.Reason, text.TruncateBytes(msg, maxEventMessage)})
	}
	d.Announce.CompileError = p.Reason == healthv1alpha1.ReasonInvalidCELExpression
	d.Release = true
	st := &d.Status
	conditions.MarkStalled(&st.Conditions, hc.Generation, p.Reason, msg)
	if st.ObservedGeneration != hc.Generation {
		st.HealthySince, st.UnhealthySince = nil, nil
	}
	st.ObservedGeneration = hc.Generation
	d.Announce.State = stateStalled
	if p.Reason == healthv1alpha1.ReasonAccessDenied {
		// A RoleBinding granted later changes nothing the controller watches: look again.
		d.RequeueAfter = AccessRecheck
		return
	}
	d.Err = controller.Permanent(p.Cause)
}

// AccessRecheck is how often a HealthCheck refused for its ServiceAccount's rights asks again;
// the answers themselves are remembered for access.DefaultTTL.
const AccessRecheck = time.Minute

// decideWaiting reports that the watches have not listed yet: computing health from half-filled
// caches could report objects as missing. The watches call back once they have listed.
func decideWaiting(d *decision, hc *healthv1alpha1.HealthCheck, waiting []string) {
	st := &d.Status
	gen := hc.Generation
	msg := "waiting for the watches to list"
	if len(waiting) > 0 {
		msg += ": " + strings.Join(waiting, ", ")
	}
	conditions.MarkReconciling(&st.Conditions, gen, healthv1alpha1.ReasonWaitingForWatches, msg)
	if st.ObservedGeneration != gen {
		// The spec changed: the soak and timeout clocks start over at the next evaluation.
		st.HealthySince, st.UnhealthySince = nil, nil
	}
	st.ObservedGeneration = gen
	d.Announce.State = stateWaiting
}

// decideHealth judges the evaluation, records the verdict in status and conditions, and decides
// its CommitStatus. While the revision source has not finished applying, it is one more target,
// InProgress, and the verdict is held back: the targets may be another revision's objects.
func decideHealth(d *decision, hc *healthv1alpha1.HealthCheck, e *evaluation) {
	resources := e.Resources
	if e.Unsettled != nil {
		resources = append(slices.Clip(resources), *e.Unsettled)
	}
	v := judge(verdictInput{
		Now: e.Now, Generation: hc.Generation, Revision: e.Revision, Unsettled: e.Unsettled != nil, Previous: hc.Status, Resources: resources,
		Timeout: duration(hc.Spec.Timeout, DefaultTimeout), SoakTime: duration(hc.Spec.SoakTime, 0),
	})
	st := &d.Status
	gen := hc.Generation
	st.ObservedGeneration = gen
	st.ObservedRevision = e.Revision
	st.Healthy = v.Healthy
	st.Summary = v.Summary
	st.Counts = v.Counts
	st.Resources = v.Resources
	st.LastHealthyTime = v.LastHealthyTime
	st.LastHealthyRevision = v.LastHealthyRevision
	st.HealthySince = v.HealthySince
	st.UnhealthySince = v.UnhealthySince
	switch v.State {
	case Healthy:
		conditions.MarkReady(&st.Conditions, gen, string(v.State), v.Message)
	case Failed, TimedOut:
		conditions.MarkNotReady(&st.Conditions, gen, string(v.State), v.Message)
	default:
		conditions.MarkReconciling(&st.Conditions, gen, string(v.State), v.Message)
	}
	decidePublication(d, hc, e, v)
	d.Announce.State, d.Announce.Counts, d.Announce.Evaluation = string(v.State), &v.Counts, e
	announceVerdict(d, hc, e.Revision, v)
	d.RequeueAfter = v.RequeueAfter
}

// announceVerdict reports transitions of the verdict, not every evaluation.
func announceVerdict(d *decision, hc *healthv1alpha1.HealthCheck, revision string, v verdict) {
	before := &hc.Status
	prev := conditions.Get(before.Conditions, conditions.Ready)
	if prev != nil && prev.Reason == string(v.State) && before.ObservedRevision == revision {
		return
	}
	d.Announce.Changed = &change{State: v.State, Revision: revision, Summary: v.Description}
	switch v.State {
	case Healthy:
		d.Announce.Events = append(d.Announce.Events, event{corev1.EventTypeNormal, string(v.State), text.TruncateBytes(v.Message, maxEventMessage)})
	case Failed, TimedOut:
		d.Announce.Events = append(d.Announce.Events, event{corev1.EventTypeWarning, string(v.State), text.TruncateBytes(v.Message, maxEventMessage)})
	}
}

func duration(d *metav1.Duration, otherwise time.Duration) time.Duration {
	if d == nil {
		return otherwise
	}
	return d.Duration
}
