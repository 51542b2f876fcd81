package manifestrelease

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// toUpgrade is a release whose source gives v2 (digest d2), with the upgrade checked.
func toUpgrade() *observation {
	o := withSource(held(), "d2")
	o.Upgrade = &upgradePlan{Number: 2, Objects: o.Source.Objects, Refs: manifest.Inventory(o.Source.Objects),
		Previous: fromInventory(o.Release.Status.Inventory)}
	return o
}

var upgradeCases = []decideCase{{
	name: "an upgrade saves its snapshot first, under the next number",
	obs:  toUpgrade,
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, saveSnapshot{}, s.Act)
		assert.Equal(t, int64(2), s.Act.(saveSnapshot).Number)
		assert.Equal(t, "v2", s.Act.(saveSnapshot).Fetched.Version)
		assert.Nil(t, s.Status, "nothing is recorded before the snapshot exists")
	},
}, {
	name: "then records the operation, and only then applies",
	obs: func() *observation {
		o := toUpgrade()
		o.Found.Saved = &saved{Info: snapshotInfo}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		require.IsType(t, applyVersion{}, s.Act)
		assert.True(t, s.Operating)
		assert.Equal(t, &snapshotInfo, s.Snapshot)
		st := after(o, s)
		assert.Equal(t, &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionUpgrade, Number: 2, Version: "v2", Digest: "d2", Revision: "r2",
			From: 1, StartTime: metav1.NewTime(decideNow)}, st.Operation)
		assert.Equal(t, "upgrading to v2 (snapshot 2) from v1 (snapshot 1)", cond(t, st, conditions.Reconciling).Message)
		assert.Equal(t, []string{"ConfigMap/web", "ConfigMap/extra"}, refNames(fromInventory(st.Inventory)), "what will exist is in the inventory first")
		assert.Equal(t, []rollbackv1.SnapshotLink{{Number: 2, Digest: "d2"}}, st.Snapshots)
		assert.Equal(t, "d2", st.LastAttemptedDigest)
		assert.Equal(t, []string{"Normal UpgradeStarted"}, reasonsOf(s.Events))
	},
}, {
	name: "an upgrade stopped by a check stalls, with every problem announced",
	obs: func() *observation {
		o := toUpgrade()
		o.Upgrade.Problem = &problem{Reason: ReasonNotOwned, Message: "ConfigMap extra exists", Backoff: true,
			More: []event{warning("CRDStillHasObjects", "and more")}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Nil(t, s.Act)
		assert.Equal(t, []string{"Warning NotOwned", "Warning CRDStillHasObjects"}, reasonsOf(s.Events))
		assert.Nil(t, after(o, s).Operation)
	},
}, {
	name: "manifests that cannot be applied are refused and held",
	obs: func() *observation {
		o := toUpgrade()
		o.Source.PrepareErr = errors.New("no kind Gadget")
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.True(t, st.LastAttemptFailed)
		assert.Equal(t, "d2", st.LastAttemptedDigest)
		assert.Equal(t, "v2 cannot be applied: no kind Gadget", cond(t, st, conditions.Stalled).Message)
		assert.Equal(t, []string{"Warning InvalidManifests"}, reasonsOf(s.Events))
	},
}, {
	name: "a snapshot too large is refused and held",
	obs: func() *observation {
		o := toUpgrade()
		o.Found.Saved = &saved{Err: &snapshot.TooLargeError{}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.True(t, st.LastAttemptFailed)
		assert.Equal(t, ReasonSnapshotTooLarge, cond(t, st, conditions.Stalled).Reason)
	},
}, {
	name: "a snapshot name another Secret holds stalls, looked at again soon, nothing recorded",
	obs: func() *observation {
		o := toUpgrade()
		o.Found.Saved = &saved{Err: fmt.Errorf("web.2: %w", snapshot.ErrNotOwned)}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.Equal(t, ReasonSnapshotNameTaken, cond(t, st, conditions.Stalled).Reason)
		assert.False(t, st.LastAttemptFailed, "the version itself did not fail")
		assert.Equal(t, minRetryDelay, s.Requeue)
	},
}}

var operationCases = []decideCase{{
	name: "applied and healthy: the tests run",
	obs: func() *observation {
		o := upgrading(1)
		o.Found.Applied = &applied{Healthy: true}
		return o
	},
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, runTests{}, s.Act)
		assert.Nil(t, s.Status)
	},
}, {
	name: "applied, not yet healthy: a look at health, the worker given back in between, nothing written",
	obs: func() *observation {
		o := upgrading(1)
		o.Found.Applied = &applied{At: decideNow.Add(-time.Minute)}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		require.IsType(t, awaitVersion{}, s.Act)
		assert.Equal(t, awaitVersion{Objects: o.Op.Objects, Since: decideNow.Add(-time.Minute), Now: decideNow}, s.Act, "it counts spec.timeout from when the version was applied")
		assert.False(t, s.Done)
		assert.Nil(t, s.Status)
	},
}, {
	name: "a resumed upgrade applies its snapshot again, writing nothing first",
	obs:  func() *observation { return upgrading(1) },
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, applyVersion{}, s.Act)
		assert.Nil(t, s.Status)
	},
}, {
	name: "unhealthy: the rollback to the version before is recorded, the attempt in the history",
	obs: func() *observation {
		o := upgrading(1)
		o.Found.Applied = &applied{Failure: &failed{Reason: ReasonHealthCheckFailed, Message: "health: web not ready"}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Operating)
		assert.False(t, s.Done)
		st := after(o, s)
		require.NotNil(t, st.Operation)
		assert.Equal(t, rollbackv1.ActionRollback, st.Operation.Action)
		assert.Equal(t, int64(1), st.Operation.Number)
		assert.Equal(t, "v1", st.Operation.Version)
		assert.Equal(t, int64(2), st.Operation.From)
		assert.True(t, st.History[0].RolledBack)
		assert.Equal(t, rollbackv1.TestNotRun, st.History[0].Test)
		assert.Equal(t, []string{"Warning UpgradeFailed"}, reasonsOf(s.Events))
		assert.Empty(t, s.Counts, "no test ran")
	},
}, {
	name: "a first install that fails has nothing to roll back to: it stays, held",
	obs: func() *observation {
		o := upgrading(0)
		o.Found.Applied = &applied{Failure: &failed{Reason: ReasonApplyFailed, Message: "apply: forbidden"}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Done)
		st := after(o, s)
		assert.Nil(t, st.Operation)
		assert.True(t, st.LastAttemptFailed)
		assert.Equal(t, ReasonInstallFailed, cond(t, st, conditions.Stalled).Reason)
		assert.Equal(t, []count{{"upgrades", "failed"}}, s.Counts)
	},
}, {
	name: "tests that fail roll back, counted",
	obs: func() *observation {
		o := upgrading(1)
		o.Release.Spec.Test = &rollbackv1.ReleaseTest{Enable: true}
		o.Found.Applied, o.Found.Tested = &applied{Healthy: true}, &tested{Result: rollbackv1.TestFailed, Message: "test Job smoke failed"}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.Equal(t, rollbackv1.ActionRollback, st.Operation.Action)
		assert.Equal(t, metav1.ConditionFalse, cond(t, st, rollbackv1.ConditionTestSuccess).Status)
		assert.Equal(t, []count{{"tests", "failed"}}, s.Counts)
	},
}, {
	name: "tests that fail under ignoreFailures go on to prune what the new version dropped",
	obs: func() *observation {
		o := upgrading(1)
		o.Release.Spec.Test = &rollbackv1.ReleaseTest{Enable: true, IgnoreFailures: true}
		o.Release.Status.Inventory = append(o.Release.Status.Inventory, rollbackv1.InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "old"})
		o.Found.Applied, o.Found.Tested = &applied{Healthy: true}, &tested{Result: rollbackv1.TestFailed, Message: "test Job smoke failed"}
		return o
	},
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, pruneStale{}, s.Act)
		assert.Equal(t, []string{"ConfigMap/old"}, refNames(s.Act.(pruneStale).Stale))
	},
}, {
	name: "pruned: the upgrade is done, deployed, in the history, counted",
	obs: func() *observation {
		o := upgrading(1)
		o.Release.Status.Conditions = []metav1.Condition{{Type: rollbackv1.ConditionRolledBack, Status: metav1.ConditionTrue}}
		o.Found.Applied, o.Found.Tested = &applied{Healthy: true}, &tested{Result: rollbackv1.TestPassed, Message: "tests passed: Job/smoke"}
		o.Found.Pruned = &pruned{KeptNumbers: []int64{1, 2}, Message: "; pruned 1 objects", Events: []event{warning(ReasonPruneFailed, "x")}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Done)
		st := after(o, s)
		assert.Nil(t, st.Operation)
		assert.Equal(t, int64(2), st.UpgradeNumber)
		assert.Equal(t, "d2", st.DeployedDigest)
		assert.Equal(t, "v2 (snapshot 2) is deployed; tests passed: Job/smoke; pruned 1 objects", cond(t, st, conditions.Ready).Message)
		assert.Equal(t, metav1.ConditionFalse, cond(t, st, rollbackv1.ConditionRolledBack).Status, "RolledBack turns False")
		assert.Equal(t, rollbackv1.TestPassed, st.History[0].Test)
		assert.Equal(t, []string{"ConfigMap/extra", "ConfigMap/web"}, refNames(fromInventory(st.Inventory)), "the new version's objects alone")
		assert.Equal(t, []count{{"tests", "passed"}, {"upgrades", "succeeded"}}, s.Counts)
		assert.Equal(t, []string{"Warning PruneFailed", "Normal UpgradeSucceeded"}, reasonsOf(s.Events))
	},
}, {
	name: "a resumed upgrade whose snapshot is gone rolls back",
	obs: func() *observation {
		o := upgrading(1)
		o.Op = &opTarget{Number: 2, LoadErr: snapshot.ErrNotFound}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.Equal(t, rollbackv1.ActionRollback, st.Operation.Action)
		assert.Contains(t, s.Events[0].Message, "failed (SnapshotMissing)")
	},
}, {
	name: "a rollback applies its snapshot, recording first the objects the inventory lacks",
	obs: func() *observation {
		o := rollingBack(rollbackv1.ActionRollback)
		o.Op.Target, o.Op.Missing = manifest.Inventory(objects("web", "back")), true
		o.Op.Stale = manifest.Inventory(objects("extra"))
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		require.IsType(t, applyRollback{}, s.Act)
		assert.Equal(t, []string{"ConfigMap/extra"}, refNames(s.Act.(applyRollback).Stale))
		assert.Equal(t, []string{"ConfigMap/web", "ConfigMap/back"}, refNames(fromInventory(after(o, s).Inventory)))
	},
}, {
	name: "a rollback blocked by a CRD stalls with the operation kept",
	obs: func() *observation {
		o := rollingBack(rollbackv1.ActionRollback)
		o.Op.Problem = &problem{Reason: "CRDStillHasObjects", Message: "gadgets remain", Recheck: 30 * time.Second}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Equal(t, 30*time.Second, s.Requeue)
		assert.NotNil(t, after(o, s).Operation)
	},
}, {
	name: "a rollback applied waits for health before it is reported",
	obs: func() *observation {
		o := rollingBack(rollbackv1.ActionRollback)
		o.Found.Rolled = &rolled{At: decideNow.Add(-time.Minute)}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		require.IsType(t, awaitRollback{}, s.Act)
		assert.Equal(t, awaitRollback{Objects: o.Op.Objects, Since: decideNow.Add(-time.Minute), Now: decideNow}, s.Act, "it counts spec.timeout from when the rollback was applied")
		assert.False(t, s.Done)
		assert.Nil(t, s.Status)
	},
}, {
	name: "a rollback done is RolledBack, and Stalled until the source changes",
	obs: func() *observation {
		o := rollingBack(rollbackv1.ActionRollback)
		o.Found.Rolled = &rolled{Settled: true}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.Nil(t, st.Operation)
		assert.Equal(t, int64(1), st.UpgradeNumber)
		assert.Equal(t, ReasonRolledBack, cond(t, st, conditions.Stalled).Reason)
		assert.Contains(t, cond(t, st, rollbackv1.ConditionRolledBack).Message, "rolled back to v1 (snapshot 1): the upgrade to snapshot 2 failed: test smoke failed")
		assert.Equal(t, []count{{"upgrades", "rolled_back"}, {"rollbacks", "automatic"}}, s.Counts)
	},
}, {
	name: "a rollback by hand that is healthy is Ready, and holds the version left",
	obs: func() *observation {
		o := rollingBack(rollbackv1.ActionManualRollback)
		o.Found.Rolled = &rolled{Settled: true}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.Equal(t, ReasonRolledBackByHand, cond(t, st, conditions.Ready).Reason)
		assert.Equal(t, "v2", st.LastAttemptedVersion)
		assert.Equal(t, []count{{"rollbacks", "manual"}}, s.Counts)
	},
}, {
	name: "a rollback the API server refuses is given up, both versions' objects kept",
	obs: func() *observation {
		o := rollingBack(rollbackv1.ActionRollback)
		o.Found.Rolled = &rolled{Refused: errors.New("forbidden")}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		st := after(o, s)
		assert.Nil(t, st.Operation)
		assert.Equal(t, ReasonRollbackFailed, cond(t, st, conditions.Stalled).Reason)
		assert.Contains(t, cond(t, st, conditions.Stalled).Message, "the rollback to v1 (snapshot 1) was refused: forbidden")
		assert.Equal(t, o.Release.Status.Inventory, st.Inventory)
	},
}}
