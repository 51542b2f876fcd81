package manifestrelease

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

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
	case p.Blocker != nil:
		return block(o, p.Blocker)
	case o.Found.Saved == nil:
		return step{Name: "save snapshot", Act: actSaveSnapshot, Number: p.Number, Fetched: src.Fetched, Adopt: p.Adopt}
	case errors.As(o.Found.Saved.Err, &tooLarge):
		return refuse(o, attempt, ReasonSnapshotTooLarge, o.Found.Saved.Err.Error())
	case o.Found.Saved.Err != nil:
		message := fmt.Sprintf("the upgrade to %s was not started: snapshot %d cannot be written, its name is taken by a Secret this release did not write (%v); delete or rename it",
			src.Fetched.Version, p.Number, o.Found.Saved.Err)
		return stall(o, ReasonSnapshotNameTaken, message, retryDelay(o.Release, ReasonSnapshotNameTaken, o.Now))
	}
	mr := o.Release
	op := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionUpgrade, Number: p.Number, Version: src.Fetched.Version, Digest: src.Digest,
		Revision: src.Fetched.Revision, From: mr.Status.UpgradeNumber, StartTime: metav1.NewTime(o.Now)}
	message := fmt.Sprintf("upgrading to %s", describe(op.Version, op.Number))
	if op.From > 0 {
		message += " from " + describe(mr.Status.DeployedVersion, op.From)
	}
	base := settle(o)
	return step{Name: "record upgrade", Operating: true, Act: actApplyVersion, Objects: p.Objects,
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			base(st, gen)
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
	message = conditionMessage(message)
	return finish(o, step{Name: "refuse " + reason, Requeue: interval(o.Release), Events: []event{warning(reason, message)},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			attempt(st, gen)
			st.LastAttemptFailed = true
			conditions.MarkStalled(&st.Conditions, gen, reason, message)
		}})
}

// decideUpgradeOp carries the recorded upgrade on: apply its snapshot and wait, test, prune,
// and report it done; any failure rolls back.
func decideUpgradeOp(o *observation) step {
	t, f, mr := o.Op, o.Found, o.Release
	switch {
	case t.LoadErr != nil:
		return upgradeFailed(o, failed{Reason: ReasonSnapshotMissing, Message: t.LoadErr.Error()})
	case t.PrepareErr != nil:
		return upgradeFailed(o, failed{Reason: ReasonInvalidManifests, Message: t.PrepareErr.Error()})
	case f.Applied == nil:
		return step{Name: "apply snapshot", Act: actApplyVersion, Objects: t.Objects}
	case f.Applied.Failure != nil:
		return upgradeFailed(o, *f.Applied.Failure)
	case f.Tested == nil:
		return step{Name: "test", Act: actTest}
	case f.Tested.Result == rollbackv1.TestFailed && !mr.Spec.Test.IgnoreFailures:
		return upgradeFailed(o, failed{Reason: ReasonTestFailed, Message: f.Tested.Message})
	case f.Pruned == nil:
		return step{Name: "prune", Act: actPrune, Stale: manifest.Stale(fromInventory(mr.Status.Inventory), manifest.Inventory(t.Objects))}
	}
	return finishUpgrade(o)
}

// finishUpgrade reports the upgrade done: deployed, tested, pruned.
func finishUpgrade(o *observation) step {
	mr, f := o.Release, o.Found
	op := *mr.Status.Operation
	result, testMessage := testResult(f)
	message := describe(op.Version, op.Number) + " is deployed"
	if result == rollbackv1.TestPassed {
		message += "; " + testMessage
	}
	if result == rollbackv1.TestFailed {
		message += "; its tests failed, which spec.test.ignoreFailures allows: " + testMessage
	}
	message += f.Pruned.Message
	refs := manifest.Inventory(o.Op.Objects)
	s := step{Name: "upgraded", Requeue: interval(mr), Counts: append(testCounts(f), count{"upgrades", "succeeded"}),
		Events: append(slices.Clone(f.Pruned.Events), normal(ReasonUpgradeSucceeded, eventMessage(message)))}
	s.Status = func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.Operation = nil
		st.Snapshots = keepLinks(st.Snapshots, f.Pruned.KeptNumbers)
		conditions.Remove(&st.Conditions, rollbackv1.ConditionSnapshotsVerified)
		if f.Pruned.Foreign != nil {
			markNotInChain(st, gen, "pruning the snapshots: "+f.Pruned.Foreign.Error())
		}
		st.UpgradeNumber, st.DeployedVersion, st.DeployedDigest = op.Number, op.Version, op.Digest
		st.Inventory = toInventory(append(slices.Clone(refs), f.Pruned.Kept...))
		st.LastAttemptFailed = false
		addHistory(st, rollbackv1.ReleaseHistoryEntry{Number: op.Number, Action: op.Action, Version: op.Version, Digest: op.Digest,
			Revision: op.Revision, Time: metav1.NewTime(o.Now), Test: result})
		setTestCondition(st, gen, result, testMessage)
		if conditions.Get(st.Conditions, rollbackv1.ConditionRolledBack) != nil {
			conditions.Set(&st.Conditions, gen, rollbackv1.ConditionRolledBack, metav1.ConditionFalse, ReasonUpgradeSucceeded, message)
		}
		conditions.MarkReady(&st.Conditions, gen, ReasonUpgradeSucceeded, conditionMessage(message))
	}
	return finish(o, s)
}

// upgradeFailed records why the upgrade failed and the rollback to the snapshot deployed before
// it; a first install has none, and stays as it is, held until its source changes.
func upgradeFailed(o *observation, why failed) step {
	mr := o.Release
	op := *mr.Status.Operation
	result, _ := testResult(o.Found)
	entry := rollbackv1.ReleaseHistoryEntry{Number: op.Number, Action: op.Action, Version: op.Version, Digest: op.Digest,
		Revision: op.Revision, Time: metav1.NewTime(o.Now), Test: result, Message: conditionMessage(why.Message)}
	if op.From == 0 {
		message := conditionMessage(fmt.Sprintf("%s failed (%s): %s. There is no earlier version to roll back to; it stays applied and is not tried again until the source changes",
			describe(op.Version, op.Number), why.Reason, why.Message))
		return finish(o, step{Name: "install failed", Events: []event{warning(ReasonInstallFailed, eventMessage(message))},
			Counts: append(testCounts(o.Found), count{"upgrades", "failed"}),
			Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
				st.Operation = nil
				st.LastAttemptFailed = true
				addHistory(st, entry)
				setTestCondition(st, gen, result, why.Message)
				conditions.MarkStalled(&st.Conditions, gen, ReasonInstallFailed, message)
			}})
	}
	entry.RolledBack = true
	rollback := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionRollback, Number: op.From, Version: mr.Status.DeployedVersion,
		Digest: mr.Status.DeployedDigest, From: op.Number, Reason: conditionMessage(why.Message), StartTime: metav1.NewTime(o.Now)}
	message := fmt.Sprintf("%s failed (%s), rolling back to %s: %s", describe(op.Version, op.Number), why.Reason,
		describe(rollback.Version, rollback.Number), why.Message)
	base := settle(o)
	return step{Name: "record rollback", Operating: true, Events: []event{warning(ReasonUpgradeFailed, eventMessage(message))}, Counts: testCounts(o.Found),
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			base(st, gen)
			st.Operation = rollback
			st.LastAttemptFailed = true
			addHistory(st, entry)
			setTestCondition(st, gen, result, why.Message)
			conditions.MarkReconciling(&st.Conditions, gen, ReasonRollingBack, conditionMessage(message))
		}}
}

// testResult is what the tests of this reconcile found; NotRun when they did not run.
func testResult(f found) (rollbackv1.TestResult, string) {
	if f.Tested == nil {
		return rollbackv1.TestNotRun, ""
	}
	return f.Tested.Result, f.Tested.Message
}

// testCounts counts a test run that passed or failed.
func testCounts(f found) []count {
	switch result, _ := testResult(f); result {
	case rollbackv1.TestPassed:
		return []count{{"tests", "passed"}}
	case rollbackv1.TestFailed:
		return []count{{"tests", "failed"}}
	}
	return nil
}
