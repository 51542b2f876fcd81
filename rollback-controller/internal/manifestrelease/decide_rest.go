package manifestrelease

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

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
		return step{Name: "correct drift", Act: actCorrectDrift, Objects: src.Objects}
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
		return step{Name: "save snapshot", Act: actSaveSnapshot, Number: p.Number, Fetched: src.Fetched, Adopt: p.Adopt}
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
	return step{Name: "record upgrade", Operating: true, Act: actApplyVersion, Objects: p.Objects,
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
