package manifestrelease

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// decide turns an observation into the next step. It reads nothing and writes nothing.
func decide(o *observation) step {
	s := complete(o, pickStep(o))
	s.Release = o.Release
	return s
}

// pickStep picks the step by where the release stands: being deleted, not yet held by the
// finalizer, suspended, in the middle of an operation, or at rest.
func pickStep(o *observation) step {
	mr := o.Release
	op := mr.Status.Operation
	switch {
	case mr.DeletionTimestamp != nil && !holdsFinalizer(mr):
		return step{Name: "deleted", Done: true}
	case mr.DeletionTimestamp != nil:
		return decideDeletion(o)
	case !holdsFinalizer(mr):
		return step{Name: "hold for deletion", Act: addFinalizer{}}
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

// decideDeletion carries out spec.prune for a release being deleted, as Flux's Kustomization
// does: with prune (the default) its objects are deleted, adopted ones given back their previous
// content; without it, or while suspended, they are left. Either way an Event and the log say
// which, once the finalizer is gone. Objects that cannot be deleted keep the release, Stalled
// with a condition that says how to let it go, looked at again with a growing delay.
func decideDeletion(o *observation) step {
	mr := o.Release
	inventory := fromInventory(mr.Status.Inventory)
	hint := fmt.Sprintf("; the release stays until they are deleted. To delete it and leave them in place: kubectl -n %s patch manifestrelease %s --type=merge -p '{\"spec\":{\"prune\":false}}'", mr.Namespace, mr.Name)
	s := step{Name: "prune all", Act: pruneAll{Inventory: inventory}}
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
	return step{Name: "let go", Act: removeFinalizer{}, Events: []event{normal(reason, message)}, Done: true}
}

// decideSource decides from what the source gives: report it deployed, keep it held, or upgrade.
func decideSource(o *observation) step {
	src, mr := o.Source, o.Release
	switch {
	case src.Err != nil:
		return sourceFailed(o, src.Err)
	case src.DigestErr != nil:
		return step{Problem: &problem{Reason: ReasonInvalidManifests, Message: src.DigestErr.Error(), Recheck: interval(mr)}}
	case src.Digest == mr.Status.DeployedDigest:
		return decideDeployed(o)
	case !wantsUpgrade(o):
		return step{Name: "held", Done: true, Poll: true}
	}
	return decideUpgrade(o)
}

// wantsUpgrade reports whether the source gives manifests that are neither deployed nor held:
// a version that failed is not tried again until its source or the spec changes.
func wantsUpgrade(o *observation) bool {
	src := o.Source
	if src.Err != nil || src.DigestErr != nil || src.Digest == o.Release.Status.DeployedDigest {
		return false
	}
	st := restingStatus(o)
	return !(st.LastAttemptFailed && src.Digest == st.LastAttemptedDigest && st.LastAttemptedGeneration == o.Release.Generation)
}

// decideDeployed applies the deployed version again, as Flux does on each interval (objects
// deleted or changed out of band come back), then reports it deployed.
func decideDeployed(o *observation) step {
	src, mr := o.Source, o.Release
	driftErr := src.PrepareErr
	if o.Found.Drift == nil && driftErr == nil {
		return step{Name: "correct drift", Act: correctDrift{Objects: src.Objects}}
	}
	if o.Found.Drift != nil {
		driftErr = o.Found.Drift.Err
	}
	if driftErr != nil {
		message := fmt.Sprintf("re-applying %s to correct drift failed: %v", describe(mr.Status.DeployedVersion, mr.Status.UpgradeNumber), driftErr)
		return step{Problem: &problem{Reason: ReasonApplyFailed, Message: message, Backoff: true}}
	}
	st := restingStatus(o)
	s := step{Name: "deployed", Done: true, Poll: true}
	ready := conditions.Get(st.Conditions, conditions.Ready)
	if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == mr.Generation && !stalledOrReconciling(st) && !st.LastAttemptFailed {
		return s
	}
	message := describe(st.DeployedVersion, st.UpgradeNumber) + " is deployed"
	s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.LastAttemptFailed = false
		conditions.MarkReady(&st.Conditions, gen, ReasonDeployed, message)
	}
	return s
}

func stalledOrReconciling(st rollbackv1.ManifestReleaseStatus) bool {
	return conditions.Get(st.Conditions, conditions.Stalled) != nil || conditions.Get(st.Conditions, conditions.Reconciling) != nil
}

// sourceFailed reports a source that cannot be read: Stalled when a person must act, looked at
// again soon and then less often when what is wrong is not watched; otherwise not Ready, retried.
func sourceFailed(o *observation, err *SourceError) step {
	mr := o.Release
	if err.NeedsPerson {
		// RBAC is not watched, nor every kind of source.
		backoff := err.Reason == ReasonForbidden || err.Reason == ReasonSourceNotFound
		return step{Problem: &problem{Reason: err.Reason, Message: err.Message, Backoff: backoff, Recheck: interval(mr)}}
	}
	message := conditionMessage(err.Message)
	s := step{Name: "source unavailable", Done: true, Requeue: min(interval(mr), time.Minute)}
	if c := conditions.Get(mr.Status.Conditions, conditions.Ready); c == nil || c.Message != message {
		s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			conditions.MarkNotReady(&st.Conditions, gen, err.Reason, message)
		}
	}
	return s
}

// decideUpgrade starts an upgrade to what the source gives: its snapshot is saved first, then
// the operation recorded in the status (the intent a restart resumes from) before anything is
// applied.
func decideUpgrade(o *observation) step {
	p, src := o.Upgrade, o.Source
	attempt := func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.LastAttemptedVersion, st.LastAttemptedDigest, st.LastAttemptedRevision = src.Fetched.Version, src.Digest, src.Fetched.Revision
		st.LastAttemptedGeneration = gen
	}
	var tooLarge *snapshot.TooLargeError
	switch {
	case src.PrepareErr != nil:
		return refuse(o, attempt, ReasonInvalidManifests, fmt.Sprintf("%s cannot be applied: %v", src.Fetched.Version, src.PrepareErr))
	case p.Problem != nil:
		return step{Problem: p.Problem}
	case o.Found.Saved == nil:
		return step{Name: "save snapshot", Act: saveSnapshot{Number: p.Number, Fetched: src.Fetched, Adopt: p.Adopt}}
	case errors.As(o.Found.Saved.Err, &tooLarge):
		return refuse(o, attempt, ReasonSnapshotTooLarge, o.Found.Saved.Err.Error())
	case o.Found.Saved.Err != nil:
		message := fmt.Sprintf("the upgrade to %s was not started: snapshot %d cannot be written, its name is taken by a Secret this release did not write (%v); delete or rename it",
			src.Fetched.Version, p.Number, o.Found.Saved.Err)
		return step{Problem: &problem{Reason: ReasonSnapshotNameTaken, Message: message, Backoff: true}}
	}
	mr := o.Release
	op := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionUpgrade, Number: p.Number, Version: src.Fetched.Version, Digest: src.Digest,
		Revision: src.Fetched.Revision, From: mr.Status.UpgradeNumber, StartTime: metav1.NewTime(o.Now)}
	message := fmt.Sprintf("upgrading to %s", describe(op.Version, op.Number))
	if op.From > 0 {
		message += " from " + describe(mr.Status.DeployedVersion, op.From)
	}
	return step{Name: "record upgrade", Operating: true, Act: applyVersion{Objects: p.Objects, At: o.Now},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			attempt(st, gen)
			st.LastAttemptFailed = false
			st.Operation = op
			st.Snapshots = linkSnapshot(st.Snapshots, op.Number, op.Digest, knownNumbers(*st, op.Number))
			st.Inventory = toInventory(union(p.Previous, p.Refs))
			conditions.MarkReconciling(&st.Conditions, gen, ReasonUpgrading, message)
		},
		Events: []event{normal(ReasonUpgradeStarted, message)}, Snapshot: &o.Found.Saved.Info}
}

// refuse holds a version that cannot be applied as it is, until its source changes.
func refuse(o *observation, attempt statusChange, reason, message string) step {
	return step{Name: "refuse " + reason, Done: true, Poll: true, Events: []event{warning(reason, message)},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			attempt(st, gen)
			st.LastAttemptFailed = true
			conditions.MarkStalled(&st.Conditions, gen, reason, message)
		}}
}

// decideAsk answers a rollback-to annotation: it records a rollback by hand to the snapshot
// asked for, or refuses it.
func decideAsk(o *observation) step {
	ask, mr := o.Ask, o.Release
	switch {
	case ask.Refused != "":
		return refuseRollback(o, ask.Refused, nil)
	case mr.Status.UpgradeNumber == 0:
		return refuseRollback(o, nothingDeployed(mr, ask.Number), nil)
	case errors.Is(ask.LoadErr, snapshot.ErrNotOwned):
		message := fmt.Sprintf("cannot roll back to snapshot %d: %v; kept snapshots: %s", ask.Number, ask.LoadErr, ask.Kept)
		return refuseRollback(o, message, func(st *rollbackv1.ManifestReleaseStatus, gen int64) { markNotInChain(st, gen, ask.LoadErr.Error()) })
	case ask.LoadErr != nil:
		return refuseRollback(o, fmt.Sprintf("cannot roll back to snapshot %d (%v); kept snapshots: %s", ask.Number, ask.LoadErr, ask.Kept), nil)
	}
	op := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionManualRollback, Number: ask.Number, Version: ask.Info.Annotations[rollbackv1.VersionAnnotation],
		Digest: ask.Info.Digest, Revision: ask.Info.Annotations[rollbackv1.RevisionAnnotation], From: mr.Status.UpgradeNumber,
		Reason: "asked for with the " + rollbackv1.RollbackToAnnotation + " annotation", StartTime: metav1.NewTime(o.Now)}
	message := fmt.Sprintf("rolling back by hand to %s", describe(op.Version, op.Number))
	return step{Name: "record manual rollback", Operating: true, Events: []event{normal(ReasonRollingBack, message)},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			st.Operation = op
			st.LastHandledRollback = ask.Value
			conditions.MarkReconciling(&st.Conditions, gen, ReasonRollingBack, message)
		}}
}

// nothingDeployed says why a release that never deployed a version cannot be rolled back: a
// rollback goes from the deployed version to an earlier one, and a first install that failed
// leaves none (its snapshot stays applied, held, and is not what was deployed).
func nothingDeployed(mr *rollbackv1.ManifestRelease, number int64) string {
	message := fmt.Sprintf("cannot roll back to snapshot %d: no version of this release was ever deployed, so there is nothing to roll back from", number)
	if mr.Status.LastAttemptFailed && mr.Status.LastAttemptedVersion != "" {
		message += fmt.Sprintf("; its first install, %s, failed and stays as it is", mr.Status.LastAttemptedVersion)
	}
	return message + ". Change the source or spec.version to install a version that works"
}

// refuseRollback answers a rollback request that cannot be done with an Event, once.
func refuseRollback(o *observation, message string, more statusChange) step {
	value := o.Ask.Value
	return step{Name: "refuse rollback", Done: true, Events: []event{warning(ReasonRollbackRefused, message)},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			st.LastHandledRollback = value
			if more != nil {
				more(st, gen)
			}
		}}
}
