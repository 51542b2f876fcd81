package manifestrelease

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// decide turns an observation into the next step. It reads nothing and writes nothing.
func decide(o *observation) step {
	return complete(o, next(o))
}

// next picks the step by where the release stands: being deleted, not yet held by the
// finalizer, suspended, in the middle of an operation, or at rest.
func next(o *observation) step {
	mr := o.Release
	op := mr.Status.Operation
	switch {
	case mr.DeletionTimestamp != nil && !holdsFinalizer(mr):
		return step{Name: "deleted", Done: true}
	case mr.DeletionTimestamp != nil:
		return decideDeletion(o)
	case !holdsFinalizer(mr):
		return step{Name: "hold for deletion", Act: actAddFinalizer}
	case o.Suspend.Suspended:
		return step{Name: "suspended", Done: true}
	case op != nil && !o.Found.Operating:
		return step{Name: "resume", Operating: true, Events: []event{normal(ReasonResumed, fmt.Sprintf("resuming the %s to %s started at %s",
			strings.ToLower(string(op.Action)), describe(op.Version, op.Number), op.StartTime.UTC().Format(time.RFC3339)))}}
	case op != nil && op.Action == rollbackv1.ActionUpgrade:
		return decideUpgradeOp(o)
	case op != nil:
		return decideRollbackOp(o)
	case o.SpecErr != nil:
		return step{Problem: &problem{Reason: ReasonInvalidSpec, Message: o.SpecErr.Error()}}
	case o.Ask != nil:
		return decideAsk(o)
	}
	s := decideSource(o)
	s.Watch = watchOrder{Forget: true}
	if o.Source.Err != nil && o.Source.Err.MissingConfigMap != "" {
		s.Watch = watchOrder{Await: o.Source.Err.MissingConfigMap}
	}
	return s
}

// complete finishes a step the same way whatever picked it. A problem becomes the Stalled
// condition, announced once, and ends the reconcile. A status write of a release not being
// deleted also carries settle, and the write that ends the reconcile marks a requestedAt acted on.
func complete(o *observation, s step) step {
	mr := o.Release
	if p := s.Problem; p != nil {
		s.Done, s.Requeue = true, p.Recheck
		if p.Backoff {
			s.Requeue = retryDelay(mr, p.Reason, o.Now)
		}
		message := conditionMessage(p.Message)
		if c := conditions.Get(mr.Status.Conditions, conditions.Stalled); c == nil || c.Message != message || c.ObservedGeneration != mr.Generation {
			s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
				conditions.MarkStalled(&st.Conditions, gen, p.Reason, message)
			}
			s.Events = append([]event{warning(p.Reason, message)}, p.More...)
		}
		s.Name = "stall " + p.Reason
	}
	if s.Poll {
		s.Requeue = interval(mr)
	}
	if mr.DeletionTimestamp != nil || (s.Status == nil && !s.Done) {
		return s
	}
	change, base := s.Status, settle(o)
	requested, asked := mr.Annotations[rollbackv1.RequestedAtAnnotation]
	handled := asked && s.Done && !o.Suspend.Suspended
	s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		base(st, gen)
		if change != nil {
			change(st, gen)
		}
		if handled {
			st.LastHandledReconcileAt = requested
		}
	}
	return s
}

// settle is what every status write of a release not being deleted carries: the Suspended
// condition set or removed, a failed version kept held across suspend and resume, and a rollback
// request that was taken away forgotten.
func settle(o *observation) statusChange {
	state := o.Suspend
	_, asked := o.Release.Annotations[rollbackv1.RollbackToAnnotation]
	return func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		wasSuspended := conditions.Get(st.Conditions, conditions.Suspended) != nil
		suspend.Report(&st.Conditions, gen, state)
		keepHeldAcrossSuspend(st, gen, state.Suspended || wasSuspended)
		if !asked {
			st.LastHandledRollback = ""
		}
	}
}

// restingStatus is the status as settle leaves it, which the decisions of a release at rest read.
func restingStatus(o *observation) rollbackv1.ManifestReleaseStatus {
	st := *o.Release.Status.DeepCopy()
	settle(o)(&st, o.Release.Generation)
	return st
}

// keepHeldAcrossSuspend keeps a failed version held when the only spec change since it failed
// is suspending or resuming the release: spec.suspend bumps the generation, which otherwise
// counts as a change of spec that tries the version again.
func keepHeldAcrossSuspend(st *rollbackv1.ManifestReleaseStatus, generation int64, suspending bool) {
	if suspending && st.LastAttemptFailed && st.LastAttemptedGeneration != 0 && st.LastAttemptedGeneration == st.ObservedGeneration {
		st.LastAttemptedGeneration = generation
	}
}

// Delays of a release stalled on something this controller does not watch (RBAC): the first
// look again comes soon, then each waits as long as the problem has lasted, up to spec.interval.
const minRetryDelay = 5 * time.Second

// retryDelay is how long to wait before looking again at a release stalled for reason.
func retryDelay(mr *rollbackv1.ManifestRelease, reason string, now time.Time) time.Duration {
	limit := max(durationOr(mr.Spec.Interval, 5*time.Minute), minRetryDelay)
	c := conditions.Get(mr.Status.Conditions, conditions.Stalled)
	if c == nil || c.Reason != reason {
		return minRetryDelay
	}
	return min(max(now.Sub(c.LastTransitionTime.Time), minRetryDelay), limit)
}

// interval is spec.interval, or its default.
func interval(mr *rollbackv1.ManifestRelease) time.Duration {
	return durationOr(mr.Spec.Interval, 5*time.Minute)
}

func durationOr(d *metav1.Duration, fallback time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return fallback
	}
	return d.Duration
}

func holdsFinalizer(mr *rollbackv1.ManifestRelease) bool {
	return slices.Contains(mr.Finalizers, rollbackv1.ManifestReleaseFinalizer)
}

func normal(reason, message string) event {
	return event{Type: corev1.EventTypeNormal, Reason: reason, Message: message}
}

func warning(reason, message string) event {
	return event{Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}

// decideDeletion carries out spec.prune for a release being deleted, as Flux's Kustomization
// does: with prune (the default) its objects are deleted, adopted ones given back their previous
// content; without it, or while suspended, they are left. Either way an Event and the log say
// which, once the finalizer is gone. Objects that cannot be deleted keep the release, Stalled
// with a condition that says how to let it go, looked at again with a growing delay.
func decideDeletion(o *observation) step {
	mr := o.Release
	inventory := fromInventory(mr.Status.Inventory)
	hint := fmt.Sprintf("; the release stays until they are deleted. To delete it and leave them in place: kubectl -n %s patch manifestrelease %s --type=merge -p '{\"spec\":{\"prune\":false}}'", mr.Namespace, mr.Name)
	s := step{Name: "prune all", Act: actPruneAll, Stale: inventory}
	switch d := o.Found.Deleted; {
	case len(inventory) == 0:
		s = letGo(ReasonObjectsLeft, "the release is deleted; it had no objects")
	case o.Suspend.Suspended:
		s = letGo(ReasonObjectsLeft, fmt.Sprintf("the release is deleted while suspended; its %d objects are left in place: %s", len(inventory), manifest.Names(inventory, 3)))
	case !pruneEnabled(mr):
		s = letGo(ReasonObjectsLeft, fmt.Sprintf("the release is deleted with spec.prune false; its %d objects are left in place: %s", len(inventory), manifest.Names(inventory, 3)))
	case o.DeletionProblem != nil:
		s = step{Problem: &problem{Reason: ReasonForbidden, Message: deletingAction + " was not started: " + o.DeletionProblem.Message + hint, Backoff: true}}
	case d != nil && d.Err != nil:
		s = step{Problem: &problem{Reason: ReasonPruneFailed, Message: deletingAction + " failed: " + d.Err.Error() + hint, Backoff: true}}
	case d != nil:
		message := fmt.Sprintf("the release is deleted; its %d objects were deleted as %s", len(d.Deleted), o.Actor)
		if len(d.Left) > 0 {
			message += fmt.Sprintf("; %d that are no longer labelled as its own are left: %s", len(d.Left), manifest.Names(d.Left, 3))
		}
		s = letGo(ReasonObjectsDeleted, message)
	}
	s.Watch = watchOrder{Forget: true}
	return s
}

// letGo removes the finalizer, and then says what became of the objects.
func letGo(reason, message string) step {
	return step{Name: "let go", Act: actRemoveFinalizer, Events: []event{normal(reason, message)}, Done: true}
}
