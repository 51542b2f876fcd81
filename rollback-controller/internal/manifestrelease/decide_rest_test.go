package manifestrelease

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
)

var restCases = []decideCase{{
	name: "a release without the finalizer gets it before anything else",
	obs: func() *observation {
		return held(func(mr *rollbackv1.ManifestRelease) { mr.Finalizers = nil })
	},
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, addFinalizer{}, s.Act)
		assert.False(t, s.Done)
		assert.Nil(t, s.Status)
	},
}, {
	name: "suspended: the Suspended condition alone, and a refresh asked for is not marked handled",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) {
			mr.Annotations = map[string]string{rollbackv1.RequestedAtAnnotation: "now"}
		})
		o.Suspend = suspend.State{Suspended: true, Reason: suspend.ReasonSpec, Message: "suspended by spec.suspend"}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Done)
		assert.Nil(t, s.Act)
		st := after(o, s)
		assert.Equal(t, "suspended by spec.suspend", cond(t, st, conditions.Suspended).Message)
		assert.Empty(t, st.LastHandledReconcileAt)
	},
}, {
	name: "suspending keeps a failed version held: spec.suspend's new generation is no change of spec",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) {
			mr.Generation = 5
			mr.Status.LastAttemptFailed, mr.Status.LastAttemptedGeneration = true, 4
		})
		o.Suspend = suspend.State{Suspended: true, Reason: suspend.ReasonSpec}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Equal(t, int64(5), after(o, s).LastAttemptedGeneration)
	},
}, {
	name: "an operation an earlier reconcile recorded is resumed, and said so",
	obs: func() *observation {
		return held(func(mr *rollbackv1.ManifestRelease) {
			mr.Status.Operation = &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionUpgrade, Number: 2, Version: "v2",
				StartTime: metav1.NewTime(decideNow.Add(-time.Minute))}
		})
	},
	check: func(t *testing.T, _ *observation, s step) {
		assert.True(t, s.Operating)
		assert.False(t, s.Done)
		assert.Nil(t, s.Status)
		assert.Equal(t, []string{"Normal OperationResumed"}, reasonsOf(s.Events))
		assert.Equal(t, "resuming the upgrade to v2 (snapshot 2) started at 2026-11-27T11:59:00Z", s.Events[0].Message)
	},
}, {
	name: "a spec a person must fix stalls, announced once, and is not looked at again until it changes",
	obs: func() *observation {
		o := held()
		o.SpecErr = errors.New(`spec.test.filters[0].name "smoke-[" is not a valid glob`)
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Done)
		assert.Zero(t, s.Requeue)
		st := after(o, s)
		assert.Equal(t, ReasonInvalidSpec, cond(t, st, conditions.Stalled).Reason)
		assert.Equal(t, []string{"Warning InvalidSpec"}, reasonsOf(s.Events))

		stalled := *o
		stalled.Release = o.Release.DeepCopy()
		stalled.Release.Status = st
		again := decide(&stalled)
		assert.Empty(t, again.Events, "the same stall is not announced again")
		assert.Equal(t, st, after(&stalled, again), "and changes nothing")
	},
}, {
	name: "a source the identity may not read stalls Forbidden, looked at again soon",
	obs: func() *observation {
		o := held()
		o.Source = &sourceRead{Err: &SourceError{Reason: ReasonForbidden, Message: "reading the source: forbidden", NeedsPerson: true}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Equal(t, minRetryDelay, s.Requeue)
		assert.Equal(t, ReasonForbidden, cond(t, after(o, s), conditions.Stalled).Reason)
		assert.True(t, s.Watch.Forget)
	},
}, {
	name: "a missing source ConfigMap is watched for",
	obs: func() *observation {
		o := held()
		o.Source = &sourceRead{Err: &SourceError{Reason: ReasonSourceNotFound, Message: "ConfigMap \"src\" does not exist", NeedsPerson: true, MissingConfigMap: "src"}}
		return o
	},
	check: func(t *testing.T, _ *observation, s step) {
		assert.Equal(t, watchOrder{Await: "src"}, s.Watch)
		assert.Equal(t, minRetryDelay, s.Requeue)
	},
}, {
	name: "a source that may come back is not Ready, retried within a minute",
	obs: func() *observation {
		o := held()
		o.Source = &sourceRead{Err: &SourceError{Reason: ReasonSourceUnavailable, Message: "git: connection reset"}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Equal(t, time.Minute, s.Requeue)
		ready := cond(t, after(o, s), conditions.Ready)
		assert.Equal(t, metav1.ConditionFalse, ready.Status)
		assert.Equal(t, "git: connection reset", ready.Message)
		assert.Empty(t, s.Events)
	},
}, {
	name: "the deployed version is applied again first, to correct drift",
	obs:  func() *observation { return withSource(held(), "d1") },
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, correctDrift{}, s.Act)
		assert.Len(t, s.Act.(correctDrift).Objects, 2)
		assert.False(t, s.Done)
	},
}, {
	name: "then it is reported deployed, a refresh marked handled, and looked at again after spec.interval",
	obs: func() *observation {
		o := withSource(held(func(mr *rollbackv1.ManifestRelease) {
			mr.Annotations = map[string]string{rollbackv1.RequestedAtAnnotation: "now"}
			mr.Spec.Interval = &metav1.Duration{Duration: time.Hour}
		}), "d1")
		o.Found.Drift = &drift{}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Done)
		assert.Equal(t, time.Hour, s.Requeue)
		st := after(o, s)
		assert.Equal(t, "v1 (snapshot 1) is deployed", cond(t, st, conditions.Ready).Message)
		assert.Equal(t, "now", st.LastHandledReconcileAt)
	},
}, {
	name: "drift that cannot be corrected stalls",
	obs: func() *observation {
		o := withSource(held(), "d1")
		o.Found.Drift = &drift{Err: errors.New("admission webhook denied")}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		stalled := cond(t, after(o, s), conditions.Stalled)
		assert.Equal(t, ReasonApplyFailed, stalled.Reason)
		assert.Equal(t, "re-applying v1 (snapshot 1) to correct drift failed: admission webhook denied", stalled.Message)
	},
}, {
	name: "a version that failed is held: not tried again until the source or the spec changes",
	obs: func() *observation {
		return withSource(held(func(mr *rollbackv1.ManifestRelease) {
			mr.Status.LastAttemptFailed, mr.Status.LastAttemptedDigest, mr.Status.LastAttemptedGeneration = true, "d2", 4
		}), "d2")
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.False(t, wantsUpgrade(o))
		assert.True(t, s.Done)
		assert.Nil(t, s.Act)
		assert.Equal(t, 5*time.Minute, s.Requeue)
		assert.Equal(t, o.Release.Status, after(o, s))
	},
}, {
	name: "the same failed version under a new spec is tried again",
	obs: func() *observation {
		o := withSource(held(func(mr *rollbackv1.ManifestRelease) {
			mr.Generation = 5
			mr.Status.LastAttemptFailed, mr.Status.LastAttemptedDigest, mr.Status.LastAttemptedGeneration = true, "d2", 4
		}), "d2")
		o.Upgrade = &upgradePlan{Number: 2, Objects: o.Source.Objects}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, wantsUpgrade(o))
		require.IsType(t, saveSnapshot{}, s.Act)
	},
}, {
	name: "a rollback asked for with a value that is no number is refused, once",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) {
			mr.Annotations = map[string]string{rollbackv1.RollbackToAnnotation: "latest"}
		})
		o.Ask = &rollbackAsk{Value: "latest", Refused: `rollback-to="latest" is not a snapshot number`}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Done)
		assert.Equal(t, []string{"Warning RollbackRefused"}, reasonsOf(s.Events))
		assert.Equal(t, "latest", after(o, s).LastHandledRollback)
	},
}, {
	name: "a rollback asked for to a snapshot that exists is recorded before anything is applied",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) {
			mr.Status.UpgradeNumber, mr.Status.DeployedVersion = 2, "v2"
			mr.Annotations = map[string]string{rollbackv1.RollbackToAnnotation: "1"}
		})
		o.Ask = &rollbackAsk{Value: "1", Number: 1, Info: snapshot.Info{Digest: "d1", Annotations: map[string]string{rollbackv1.VersionAnnotation: "v1"}}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.False(t, s.Done)
		assert.True(t, s.Operating)
		st := after(o, s)
		assert.Equal(t, &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionManualRollback, Number: 1, Version: "v1", Digest: "d1", From: 2,
			Reason: "asked for with the " + rollbackv1.RollbackToAnnotation + " annotation", StartTime: metav1.NewTime(decideNow)}, st.Operation)
		assert.Equal(t, "1", st.LastHandledRollback)
		assert.Equal(t, "rolling back by hand to v1 (snapshot 1)", cond(t, st, conditions.Reconciling).Message)
	},
}, {
	name: "a rollback asked for after a first install that failed is refused: nothing was deployed to roll back from",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) {
			mr.Status.UpgradeNumber, mr.Status.DeployedVersion, mr.Status.DeployedDigest, mr.Status.Inventory = 0, "", "", nil
			mr.Status.LastAttemptFailed, mr.Status.LastAttemptedVersion = true, "v1"
			mr.Status.History = []rollbackv1.ReleaseHistoryEntry{{Number: 1, Action: rollbackv1.ActionUpgrade, Version: "v1", Digest: "d1", Message: "test smoke failed"}}
			conditions.MarkStalled(&mr.Status.Conditions, 4, ReasonInstallFailed, "v1 (snapshot 1) failed")
			mr.Annotations = map[string]string{rollbackv1.RollbackToAnnotation: "1"}
		})
		// Snapshot 1 exists: it is what the failed install applied.
		o.Ask = &rollbackAsk{Value: "1", Number: 1, Info: snapshot.Info{Digest: "d1", Annotations: map[string]string{rollbackv1.VersionAnnotation: "v1"}}}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.True(t, s.Done)
		assert.False(t, s.Operating)
		assert.Equal(t, []string{"Warning RollbackRefused"}, reasonsOf(s.Events))
		assert.Equal(t, "cannot roll back to snapshot 1: no version of this release was ever deployed, so there is nothing to roll back from; "+
			"its first install, v1, failed and stays as it is. Change the source or spec.version to install a version that works", s.Events[0].Message)
		st := after(o, s)
		assert.Nil(t, st.Operation)
		assert.Equal(t, "1", st.LastHandledRollback)
		assert.Zero(t, st.UpgradeNumber)
		assert.Equal(t, metav1.ConditionFalse, cond(t, st, conditions.Ready).Status)
		assert.Equal(t, ReasonInstallFailed, cond(t, st, conditions.Ready).Reason)
		assert.Nil(t, conditions.Get(st.Conditions, rollbackv1.ConditionRolledBack))
		assert.Equal(t, ReasonInstallFailed, cond(t, st, conditions.Stalled).Reason)
	},
}, {
	name: "a rollback request taken away is forgotten",
	obs: func() *observation {
		o := withSource(held(func(mr *rollbackv1.ManifestRelease) { mr.Status.LastHandledRollback = "1" }), "d1")
		o.Found.Drift = &drift{}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Empty(t, after(o, s).LastHandledRollback)
	},
}}
