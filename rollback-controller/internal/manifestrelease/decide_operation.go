package manifestrelease

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
)

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
		return step{Name: "apply snapshot", Act: applyVersion{Objects: t.Objects, At: o.Now}}
	case f.Applied.Failure != nil:
		return upgradeFailed(o, *f.Applied.Failure)
	case !f.Applied.Healthy:
		return step{Name: "wait for health", Act: awaitVersion{Objects: t.Objects, Since: f.Applied.At, Now: o.Now}}
	case f.Tested == nil:
		return step{Name: "test", Act: runTests{}}
	case f.Tested.Result == rollbackv1.TestFailed && !mr.Spec.Test.IgnoreFailures:
		return upgradeFailed(o, failed{Reason: ReasonTestFailed, Message: f.Tested.Message})
	case f.Pruned == nil:
		return step{Name: "prune", Act: pruneStale{Stale: manifest.Stale(fromInventory(mr.Status.Inventory), manifest.Inventory(t.Objects))}}
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
	s := step{Name: "upgraded", Done: true, Poll: true, Counts: append(testCounts(f), count{"upgrades", "succeeded"}),
		Events: append(slices.Clone(f.Pruned.Events), normal(ReasonUpgradeSucceeded, message))}
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
		conditions.MarkReady(&st.Conditions, gen, ReasonUpgradeSucceeded, message)
	}
	return s
}

// upgradeFailed records why the upgrade failed and the rollback to the snapshot deployed before
// it; a first install has none, and stays as it is, held until its source changes.
func upgradeFailed(o *observation, why failed) step {
	mr := o.Release
	op := *mr.Status.Operation
	result, _ := testResult(o.Found)
	entry := rollbackv1.ReleaseHistoryEntry{Number: op.Number, Action: op.Action, Version: op.Version, Digest: op.Digest,
		Revision: op.Revision, Time: metav1.NewTime(o.Now), Test: result, Message: why.Message}
	if op.From == 0 {
		message := fmt.Sprintf("%s failed (%s): %s. There is no earlier version to roll back to; it stays applied and is not tried again until the source changes",
			describe(op.Version, op.Number), why.Reason, why.Message)
		return step{Name: "install failed", Done: true, Events: []event{warning(ReasonInstallFailed, message)},
			Counts: append(testCounts(o.Found), count{"upgrades", "failed"}),
			Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
				st.Operation = nil
				st.LastAttemptFailed = true
				addHistory(st, entry)
				setTestCondition(st, gen, result, why.Message)
				conditions.MarkStalled(&st.Conditions, gen, ReasonInstallFailed, message)
			}}
	}
	entry.RolledBack = true
	rollback := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionRollback, Number: op.From, Version: mr.Status.DeployedVersion,
		Digest: mr.Status.DeployedDigest, From: op.Number, Reason: why.Message, StartTime: metav1.NewTime(o.Now)}
	message := fmt.Sprintf("%s failed (%s), rolling back to %s: %s", describe(op.Version, op.Number), why.Reason,
		describe(rollback.Version, rollback.Number), why.Message)
	return step{Name: "record rollback", Operating: true, Events: []event{warning(ReasonUpgradeFailed, message)}, Counts: testCounts(o.Found),
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			st.Operation = rollback
			st.LastAttemptFailed = true
			addHistory(st, entry)
			setTestCondition(st, gen, result, why.Message)
			conditions.MarkReconciling(&st.Conditions, gen, ReasonRollingBack, message)
		}}
}

// testResult is what the tests of this reconcile found; NotRun when they did not run.
func testResult(f findings) (rollbackv1.TestResult, string) {
	if f.Tested == nil {
		return rollbackv1.TestNotRun, ""
	}
	return f.Tested.Result, f.Tested.Message
}

// testCounts counts a test run that passed or failed.
func testCounts(f findings) []count {
	switch result, _ := testResult(f); result {
	case rollbackv1.TestPassed:
		return []count{{"tests", "passed"}}
	case rollbackv1.TestFailed:
		return []count{{"tests", "failed"}}
	}
	return nil
}

// addHistory puts entry first, replacing an entry of the same number, and bounds the list.
func addHistory(st *rollbackv1.ManifestReleaseStatus, entry rollbackv1.ReleaseHistoryEntry) {
	history := slices.DeleteFunc(slices.Clone(st.History), func(e rollbackv1.ReleaseHistoryEntry) bool {
		return e.Number == entry.Number && e.Action == entry.Action
	})
	history = append([]rollbackv1.ReleaseHistoryEntry{entry}, history...)
	if len(history) > rollbackv1.MaxReleaseHistory {
		history = history[:rollbackv1.MaxReleaseHistory]
	}
	st.History = history
}

// setTestCondition records the result of tests; NotRun leaves the last result alone.
func setTestCondition(st *rollbackv1.ManifestReleaseStatus, generation int64, result rollbackv1.TestResult, message string) {
	switch result {
	case rollbackv1.TestPassed:
		conditions.Set(&st.Conditions, generation, rollbackv1.ConditionTestSuccess, metav1.ConditionTrue, ReasonTestsPassed, message)
	case rollbackv1.TestFailed:
		conditions.Set(&st.Conditions, generation, rollbackv1.ConditionTestSuccess, metav1.ConditionFalse, ReasonTestFailed, message)
	}
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
	case t.Problem != nil:
		return step{Problem: t.Problem}
	case f.Rolled == nil:
		s := step{Name: "apply rollback", Act: applyRollback{Objects: t.Objects, Stale: t.Stale, At: o.Now}}
		if t.Missing {
			// Objects the target has and the inventory does not: record them before they exist.
			all := union(fromInventory(mr.Status.Inventory), t.Target)
			s.Status = func(st *rollbackv1.ManifestReleaseStatus, _ int64) { st.Inventory = toInventory(all) }
		}
		return s
	case f.Rolled.Refused != nil:
		return abandonRollback(o, fmt.Sprintf("the rollback to %s was refused: %v", describe(op.Version, op.Number), f.Rolled.Refused))
	case !f.Rolled.Settled:
		return step{Name: "wait for health", Act: awaitRollback{Objects: t.Objects, Since: f.Rolled.At, Now: o.Now}}
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
	target := manifest.Inventory(o.Op.Objects)
	return step{Name: "rolled back", Done: true, Poll: true, Counts: append(counts, count{"rollbacks", trigger}),
		Events: []event{normal(reason, message)},
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
		}}
}

// abandonRollback gives up a rollback that can never work, saying so. The inventory keeps every
// object of both versions, so nothing is forgotten.
func abandonRollback(o *observation, message string) step {
	message += "; the objects of both versions stay in the inventory: apply a version that works"
	return step{Name: "abandon rollback", Done: true, Events: []event{warning(ReasonRollbackFailed, message)},
		Status: func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			st.Operation = nil
			st.LastAttemptFailed = true
			conditions.MarkStalled(&st.Conditions, gen, ReasonRollbackFailed, message)
		}}
}
