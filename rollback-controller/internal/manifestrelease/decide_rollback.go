package manifestrelease

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// decideAsk answers a rollback-to annotation: it records a rollback by hand to the snapshot
// asked for, or refuses it.
func decideAsk(o *observation) step {
	ask, mr := o.Ask, o.Release
	switch {
	case ask.Refused != "":
		return refuseRollback(o, ask.Refused, nil)
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
	base := settle(o)
	return step{Name: "record manual rollback", Operating: true, Events: []event{normal(ReasonRollingBack, message)},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			base(st, gen)
			st.Operation = op
			st.LastHandledRollback = ask.Value
			conditions.MarkReconciling(&st.Conditions, gen, ReasonRollingBack, message)
		}}
}

// refuseRollback answers a rollback request that cannot be done with an Event, once.
func refuseRollback(o *observation, message string, more statusChange) step {
	value := o.Ask.Value
	return finish(o, step{Name: "refuse rollback", Events: []event{warning(ReasonRollbackRefused, message)},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			st.LastHandledRollback = value
			if more != nil {
				more(st, gen)
			}
		}})
}

// decideRollbackOp carries the recorded rollback on: apply the snapshot it names, delete what
// only the version left behind had, wait for health, and report it. CRD changes that would lose
// data and missing rights stop it, Stalled, with the operation kept so that it finishes once a
// person has acted.
func decideRollbackOp(o *observation) step {
	t, f, mr := o.Op, o.Found, o.Release
	op := mr.Status.Operation
	switch {
	case t.LoadErr != nil:
		return abandonRollback(o, fmt.Sprintf("cannot roll back to snapshot %d: %v", op.Number, t.LoadErr))
	case t.PrepareErr != nil:
		return abandonRollback(o, fmt.Sprintf("snapshot %d no longer applies: %v", op.Number, t.PrepareErr))
	case t.Blocker != nil:
		return block(o, t.Blocker)
	case f.Rolled == nil:
		s := step{Name: "apply rollback", Act: actApplyRollback, Objects: t.Objects, Stale: t.Stale}
		if t.Missing {
			// Objects the target has and the inventory does not: record them before they exist.
			all := union(fromInventory(mr.Status.Inventory), t.Target)
			s.Status = func(st *rollbackv1.ManifestReleaseStatus, _ int64) { st.Inventory = toInventory(all) }
		}
		return s
	case f.Rolled.Refused != nil:
		return abandonRollback(o, fmt.Sprintf("the rollback to %s was refused: %v", describe(op.Version, op.Number), f.Rolled.Refused))
	}
	return finishRollback(o)
}

// finishRollback reports the rollback done: RolledBack, and Stalled until the source changes,
// or Ready for a rollback by hand that is healthy.
func finishRollback(o *observation) step {
	mr, note := o.Release, o.Found.Rolled.HealthNote
	op := *mr.Status.Operation
	manual := op.Action == rollbackv1.ActionManualRollback
	from := mr.Status.DeployedVersion
	reason, trigger := ReasonRolledBack, "automatic"
	message := fmt.Sprintf("rolled back to %s: the upgrade to snapshot %d failed: %s. It is not tried again until the source or the spec changes%s",
		describe(op.Version, op.Number), op.From, op.Reason, note)
	counts := []count{{"upgrades", "rolled_back"}}
	if manual {
		reason, trigger, counts = ReasonRolledBackByHand, "manual", nil
		message = fmt.Sprintf("rolled back by hand from %s to %s; %s is not applied again until the source changes%s",
			describe(from, op.From), describe(op.Version, op.Number), from, note)
	}
	message = conditionMessage(message)
	target := manifest.Inventory(o.Op.Objects)
	return finish(o, step{Name: "rolled back", Requeue: interval(mr), Counts: append(counts, count{"rollbacks", trigger}),
		Events: []event{normal(reason, eventMessage(message))},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			if manual {
				st.LastAttemptedVersion, st.LastAttemptedDigest, st.LastAttemptedGeneration = from, st.DeployedDigest, gen
				addHistory(st, rollbackv1.ReleaseHistoryEntry{Number: op.Number, Action: op.Action, Version: op.Version, Digest: op.Digest,
					Time: metav1.NewTime(o.Now), Message: "rolled back by hand from " + describe(from, op.From)})
			}
			st.Operation = nil
			st.LastAttemptFailed = true
			st.UpgradeNumber, st.DeployedVersion, st.DeployedDigest = op.Number, op.Version, op.Digest
			st.Inventory = toInventory(target)
			conditions.Set(&st.Conditions, gen, rollbackv1.ConditionRolledBack, metav1.ConditionTrue, reason, message)
			if manual && note == "" {
				conditions.MarkReady(&st.Conditions, gen, reason, message)
			} else {
				conditions.MarkStalled(&st.Conditions, gen, reason, message)
			}
		}})
}

// abandonRollback gives up a rollback that can never work, saying so. The inventory keeps every
// object of both versions, so nothing is forgotten.
func abandonRollback(o *observation, message string) step {
	message = conditionMessage(message + "; the objects of both versions stay in the inventory: apply a version that works")
	return finish(o, step{Name: "abandon rollback", Events: []event{warning(ReasonRollbackFailed, eventMessage(message))},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			st.Operation = nil
			st.LastAttemptFailed = true
			conditions.MarkStalled(&st.Conditions, gen, ReasonRollbackFailed, message)
		}})
}

// decideDeletion carries out spec.prune for a release being deleted, as Flux's Kustomization
// does: with prune (the default) its objects are deleted, adopted ones given back their previous
// content; without it, or while suspended, they are left. Either way an Event and the log say
// which, once the finalizer is gone. Objects that cannot be deleted keep the release, Stalled
// with a condition that says how to let it go, looked at again with a growing delay.
func decideDeletion(o *observation) step {
	mr := o.Release
	if !holdsFinalizer(mr) {
		return step{Name: "deleted", Done: true}
	}
	inventory := fromInventory(mr.Status.Inventory)
	hint := fmt.Sprintf("; the release stays until they are deleted. To delete it and leave them in place: kubectl -n %s patch manifestrelease %s --type=merge -p '{\"spec\":{\"prune\":false}}'", mr.Namespace, mr.Name)
	var s step
	switch d := o.Found.Deleted; {
	case len(inventory) == 0:
		s = letGo(ReasonObjectsLeft, "the release is deleted; it had no objects")
	case o.Suspend.Suspended:
		s = letGo(ReasonObjectsLeft, fmt.Sprintf("the release is deleted while suspended; its %d objects are left in place: %s", len(inventory), manifest.Names(inventory, 3)))
	case !pruneEnabled(mr):
		s = letGo(ReasonObjectsLeft, fmt.Sprintf("the release is deleted with spec.prune false; its %d objects are left in place: %s", len(inventory), manifest.Names(inventory, 3)))
	case o.DeletionBlocker != nil:
		s = stall(o, ReasonForbidden, deletingAction+" was not started: "+o.DeletionBlocker.Message+hint, retryDelay(mr, ReasonForbidden, o.Now))
	case d == nil:
		s = step{Name: "prune all", Act: actPruneAll, Stale: inventory}
	case d.Err != nil:
		s = stall(o, ReasonPruneFailed, deletingAction+" failed: "+d.Err.Error()+hint, retryDelay(mr, ReasonPruneFailed, o.Now))
	default:
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
