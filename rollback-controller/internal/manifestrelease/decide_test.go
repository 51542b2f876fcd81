package manifestrelease

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
)

var decideNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// held is a release at rest with its finalizer, generation 4, running v1 (snapshot 1) with one
// ConfigMap.
func held(mutate ...func(*rollbackv1.ManifestRelease)) *observation {
	mr := &rollbackv1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 4, Finalizers: []string{rollbackv1.ManifestReleaseFinalizer}},
		Status: rollbackv1.ManifestReleaseStatus{ObservedGeneration: 4, UpgradeNumber: 1, DeployedVersion: "v1", DeployedDigest: "d1",
			Inventory: []rollbackv1.InventoryEntry{{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "web"}},
			History:   []rollbackv1.ReleaseHistoryEntry{{Number: 1, Action: rollbackv1.ActionUpgrade, Version: "v1", Digest: "d1"}}},
	}
	for _, m := range mutate {
		m(mr)
	}
	return &observation{Release: mr, Now: decideNow, Actor: "ServiceAccount team/deployer"}
}

// withSource gives the observation a source read with digest, as version v2 with one ConfigMap.
func withSource(o *observation, digest string) *observation {
	o.Source = &sourceRead{Fetched: Fetched{Version: "v2", Revision: "r2"}, Digest: digest, Objects: objects("web", "extra")}
	return o
}

// upgrading is a release in the middle of the upgrade to v2 (snapshot 2) from v1 (snapshot 1).
func upgrading(from int64) *observation {
	o := held(func(mr *rollbackv1.ManifestRelease) {
		mr.Status.Operation = &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionUpgrade, Number: 2, Version: "v2", Digest: "d2", From: from}
		if from == 0 {
			mr.Status.UpgradeNumber, mr.Status.DeployedVersion, mr.Status.DeployedDigest, mr.Status.History = 0, "", "", nil
		}
	})
	o.Op = &opTarget{Number: 2, Objects: objects("web", "extra")}
	o.Found.Operating = true
	return o
}

// rollingBack is a release in the middle of a rollback to v1 (snapshot 1) from snapshot 2.
func rollingBack(action rollbackv1.ReleaseAction) *observation {
	o := held(func(mr *rollbackv1.ManifestRelease) {
		mr.Status.UpgradeNumber, mr.Status.DeployedVersion, mr.Status.DeployedDigest = 2, "v2", "d2"
		mr.Status.Operation = &rollbackv1.ReleaseOperation{Action: action, Number: 1, Version: "v1", Digest: "d1", From: 2, Reason: "test smoke failed"}
	})
	o.Op = &opTarget{Number: 1, Objects: objects("web"), Target: manifest.Inventory(objects("web"))}
	o.Found.Operating = true
	return o
}

func objects(names ...string) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(names))
	for i, n := range names {
		out[i] = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": n, "namespace": "team"}}}
	}
	return out
}

// after applies the step's status change to the status observed, as the status writer would.
func after(o *observation, s step) rollbackv1.ManifestReleaseStatus {
	st := *o.Release.Status.DeepCopy()
	if s.Status != nil {
		s.Status(&st, o.Release.Generation)
	}
	return st
}

func reasonsOf(events []event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

func cond(t *testing.T, st rollbackv1.ManifestReleaseStatus, kind string) metav1.Condition {
	t.Helper()
	c := conditions.Get(st.Conditions, kind)
	require.NotNil(t, c, "condition %s", kind)
	return *c
}

// decideCase is an observation and what decide must make of it.
type decideCase struct {
	name  string
	obs   func() *observation
	check func(t *testing.T, o *observation, s step)
}

func TestDecide(t *testing.T) {
	for _, cases := range [][]decideCase{deletionCases, restCases, upgradeCases, operationCases} {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				o := tc.obs()
				before := o.Release.DeepCopy()
				s := decide(o)
				tc.check(t, o, s)
				assert.Equal(t, before, o.Release, "decide changes nothing it reads")
			})
		}
	}
}

var deletionCases = []decideCase{{
	name: "a deleted release without the finalizer: nothing left to do",
	obs: func() *observation {
		return held(func(mr *rollbackv1.ManifestRelease) { mr.DeletionTimestamp, mr.Finalizers = ptr.To(metav1.Now()), nil })
	},
	check: func(t *testing.T, _ *observation, s step) {
		assert.True(t, s.Done)
		assert.Nil(t, s.Act)
		assert.Nil(t, s.Status)
	},
}, {
	name: "a deleted release with objects and prune: they are deleted first",
	obs: func() *observation {
		return held(func(mr *rollbackv1.ManifestRelease) { mr.DeletionTimestamp = ptr.To(metav1.Now()) })
	},
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, pruneAll{}, s.Act)
		assert.False(t, s.Done)
		assert.Equal(t, []string{"ConfigMap/web"}, refNames(s.Act.(pruneAll).Inventory))
		assert.True(t, s.Watch.Forget)
	},
}, {
	name: "a deleted release whose objects were deleted lets go, saying as whom",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) { mr.DeletionTimestamp = ptr.To(metav1.Now()) })
		o.Found.Deleted = &deleted{Deleted: fromInventory(o.Release.Status.Inventory), Left: manifest.Inventory(objects("taken"))}
		return o
	},
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, removeFinalizer{}, s.Act)
		assert.True(t, s.Done)
		require.Len(t, s.Events, 1)
		assert.Equal(t, ReasonObjectsDeleted, s.Events[0].Reason)
		assert.Contains(t, s.Events[0].Message, "its 1 objects were deleted as ServiceAccount team/deployer; 1 that are no longer labelled as its own are left")
		assert.Nil(t, s.Status, "a release on its way out writes no status to say so")
	},
}, {
	name: "a deleted release whose objects could not be deleted stays, Stalled, with how to let it go",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) { mr.DeletionTimestamp = ptr.To(metav1.Now()) })
		o.Found.Deleted = &deleted{Err: errors.New("the server is on fire")}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Nil(t, s.Act)
		assert.Equal(t, minRetryDelay, s.Requeue)
		stalled := cond(t, after(o, s), conditions.Stalled)
		assert.Equal(t, ReasonPruneFailed, stalled.Reason)
		assert.Contains(t, stalled.Message, "the server is on fire; the release stays until they are deleted")
		assert.Contains(t, stalled.Message, `-p '{"spec":{"prune":false}}'`)
	},
}, {
	name: "a deleted release whose identity may not delete its objects is Stalled before any is deleted",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) { mr.DeletionTimestamp = ptr.To(metav1.Now()) })
		o.DeletionProblem = &problem{Reason: ReasonForbidden, Message: "cannot delete configmaps"}
		return o
	},
	check: func(t *testing.T, o *observation, s step) {
		assert.Nil(t, s.Act)
		assert.Equal(t, ReasonForbidden, cond(t, after(o, s), conditions.Stalled).Reason)
		assert.Equal(t, []string{"Warning Forbidden"}, reasonsOf(s.Events))
	},
}, {
	name: "a deleted release with spec.prune false leaves its objects",
	obs: func() *observation {
		return held(func(mr *rollbackv1.ManifestRelease) {
			mr.DeletionTimestamp, mr.Spec.Prune = ptr.To(metav1.Now()), ptr.To(false)
		})
	},
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, removeFinalizer{}, s.Act)
		assert.Equal(t, ReasonObjectsLeft, s.Events[0].Reason)
		assert.Contains(t, s.Events[0].Message, "spec.prune false; its 1 objects are left in place")
	},
}, {
	name: "a deleted release that is suspended leaves its objects",
	obs: func() *observation {
		o := held(func(mr *rollbackv1.ManifestRelease) { mr.DeletionTimestamp = ptr.To(metav1.Now()) })
		o.Suspend = suspend.State{Suspended: true}
		return o
	},
	check: func(t *testing.T, _ *observation, s step) {
		require.IsType(t, removeFinalizer{}, s.Act)
		assert.Contains(t, s.Events[0].Message, "deleted while suspended")
	},
}}

func refNames(refs []manifest.Ref) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Kind+"/"+r.Name)
	}
	return out
}

// snapshotInfo is what a saved snapshot reports.
var snapshotInfo = snapshot.Info{Number: 2, Size: 300, CompressedSize: 120, Chunks: 1}
