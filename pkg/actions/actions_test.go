package actions

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/suspend"
)

var now = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func gateObject(spec gatingv1alpha1.GateSpec) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team"}, Spec: spec}
}

func TestSetGateByHandAndByOverride(t *testing.T) {
	ctx := context.Background()
	client := fake.NewSimpleClientset(gateObject(gatingv1alpha1.GateSpec{Message: "old"}))
	gates := client.GatingV1alpha1().Gates("team")

	g, err := SetGate(ctx, gates, "prod", GateChange{Message: "sign-off"}, now, "test")
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed)
	assert.Equal(t, "sign-off", g.Spec.Message)
	assert.Nil(t, g.Spec.Override)

	g, err = SetGate(ctx, gates, "prod", GateChange{Open: true, For: 90 * time.Minute, Message: "hotfix"}, now, "test")
	require.NoError(t, err)
	require.NotNil(t, g.Spec.Override)
	assert.Equal(t, gatingv1alpha1.StateOpen, g.Spec.Override.State)
	assert.Equal(t, now.Add(90*time.Minute), g.Spec.Override.Until.Time.UTC())
	assert.True(t, g.Spec.Closed, "an override leaves the state by hand to return to")

	g, err = SetGate(ctx, gates, "prod", GateChange{Open: true}, now, "test")
	require.NoError(t, err)
	assert.False(t, g.Spec.Closed)
	assert.Empty(t, g.Spec.Message)
	assert.Nil(t, g.Spec.Override, "a change by hand removes the override")

	_, err = SetGate(ctx, gates, "staging", GateChange{}, now, "test")
	assert.True(t, isNotFound(err), "%v", err)
}

func TestSetGateRetriesOnConflict(t *testing.T) {
	client := fake.NewSimpleClientset(gateObject(gatingv1alpha1.GateSpec{}))
	conflicts := 1
	client.PrependReactor("update", "gates", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, conflictErr()
		}
		return false, nil, nil
	})
	g, err := SetGate(context.Background(), client.GatingV1alpha1().Gates("team"), "prod", GateChange{}, now, "test")
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed)
	assert.Zero(t, conflicts)
}

func TestApproveReplacesDropsExpiredAndBounds(t *testing.T) {
	ctx := context.Background()
	past := metav1.NewTime(now.Add(-time.Minute))
	client := fake.NewSimpleClientset(gateObject(gatingv1alpha1.GateSpec{Closed: true, Approvals: []gatingv1alpha1.GateApproval{
		{Revision: "6.0.1", Message: "first"},
		{Revision: "6.0.0", Until: &past},
	}}))
	gates := client.GatingV1alpha1().Gates("team")
	g, err := Approve(ctx, gates, "prod", gatingv1alpha1.GateApproval{Revision: "6.0.1", By: "alice", Message: "again"}, now, "test")
	require.NoError(t, err)
	require.Len(t, g.Spec.Approvals, 1, "the expired approval is dropped, the same revision replaced")
	assert.Equal(t, "again", g.Spec.Approvals[0].Message)
	assert.Equal(t, "alice", g.Spec.Approvals[0].By)

	full := gateObject(gatingv1alpha1.GateSpec{})
	full.Name = "full"
	for i := range MaxApprovals {
		full.Spec.Approvals = append(full.Spec.Approvals, gatingv1alpha1.GateApproval{Revision: fmt.Sprintf("1.0.%d", i)})
	}
	_, err = client.GatingV1alpha1().Gates("team").Create(ctx, full, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = Approve(ctx, gates, "full", gatingv1alpha1.GateApproval{Revision: "2.0.0"}, now, "test")
	var tooMany *TooManyApprovalsError
	require.ErrorAs(t, err, &tooMany)
	assert.Equal(t, MaxApprovals, tooMany.Count)
}

func TestRemoveApproval(t *testing.T) {
	ctx := context.Background()
	client := fake.NewSimpleClientset(gateObject(gatingv1alpha1.GateSpec{Approvals: []gatingv1alpha1.GateApproval{{Revision: "a"}, {Revision: "b"}}}))
	gates := client.GatingV1alpha1().Gates("team")
	g, removed, err := RemoveApproval(ctx, gates, "prod", "a", "test")
	require.NoError(t, err)
	assert.True(t, removed)
	assert.Equal(t, []gatingv1alpha1.GateApproval{{Revision: "b"}}, g.Spec.Approvals)

	updates := 0
	client.PrependReactor("update", "gates", func(k8stesting.Action) (bool, runtime.Object, error) { updates++; return false, nil, nil })
	_, removed, err = RemoveApproval(ctx, gates, "prod", "a", "test")
	require.NoError(t, err)
	assert.False(t, removed)
	assert.Zero(t, updates, "nothing to remove writes nothing")
}

var kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

func kustomization(annotations map[string]string, suspended bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"suspend": suspended}}}
	u.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	u.SetKind("Kustomization")
	u.SetNamespace("team")
	u.SetName("apps")
	u.SetAnnotations(annotations)
	return u
}

func TestSuspendAppliesAnnotationAndSpecOnlyWhenAsked(t *testing.T) {
	for _, bySpec := range []bool{false, true} {
		dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
		// The fake client cannot merge an apply; the test reads the patch the API server gets.
		dyn.PrependReactor("patch", "kustomizations", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, kustomization(nil, false), nil
		})
		_, how, err := Suspend(context.Background(), dyn.Resource(kustomizations).Namespace("team"), kustomization(nil, false).GroupVersionKind(), "apps", "migrating", bySpec, "test")
		require.NoError(t, err)
		var applied *unstructured.Unstructured
		for _, a := range dyn.Actions() {
			if p, ok := a.(k8stesting.PatchAction); ok {
				require.Equal(t, types.ApplyPatchType, p.GetPatchType(), "a server-side apply")
				applied = &unstructured.Unstructured{}
				require.NoError(t, applied.UnmarshalJSON(p.GetPatch()))
			}
		}
		require.NotNil(t, applied)
		assert.Equal(t, "migrating", applied.GetAnnotations()[suspend.Annotation])
		v, found, _ := unstructured.NestedBool(applied.Object, "spec", "suspend")
		assert.Equal(t, bySpec, found && v, "spec.suspend only by spec")
		if bySpec {
			assert.Equal(t, "spec.suspend and the annotation", how)
		} else {
			assert.Equal(t, "the annotation", how)
		}
	}
}

func TestResumeRemovesWhatSuspends(t *testing.T) {
	for _, tc := range []struct {
		name   string
		obj    *unstructured.Unstructured
		undone string
	}{
		{"both", kustomization(map[string]string{suspend.Annotation: "x"}, true), "the " + suspend.Annotation + " annotation and spec.suspend"},
		{"annotation", kustomization(map[string]string{suspend.Annotation: "x"}, false), "the " + suspend.Annotation + " annotation"},
		{"spec", kustomization(nil, true), "spec.suspend"},
		{"nothing", kustomization(nil, false), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), tc.obj)
			objects := dyn.Resource(kustomizations).Namespace("team")
			_, undone, err := Resume(context.Background(), objects, "apps", "test")
			require.NoError(t, err)
			assert.Equal(t, tc.undone, undone)
			got, err := objects.Get(context.Background(), "apps", metav1.GetOptions{})
			require.NoError(t, err)
			_, annotated := suspend.Reason(got)
			assert.False(t, annotated)
			v, _, _ := unstructured.NestedBool(got.Object, "spec", "suspend")
			assert.False(t, v)
		})
	}
}

func strategy() *promoterv1alpha1.PromotionStrategy {
	return &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{
			{Branch: "env/prod", Active: promoterv1alpha1.CommitState{DrySHA: "c3"}, LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: "c3"}, {SHA: "c2"}, {SHA: "c1"}}},
			{Branch: "env/new", Active: promoterv1alpha1.CommitState{DrySHA: "c1"}, LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: "c1"}}},
		}},
	}
}

func TestCheckRevert(t *testing.T) {
	ps := strategy()
	assert.NoError(t, CheckRevert(ps, Revert{Branch: "env/prod", SHA: "c2"}))
	assert.ErrorContains(t, CheckRevert(ps, Revert{Branch: "env/prod", SHA: "c3"}), "choose one of: c2, c1")
	assert.ErrorContains(t, CheckRevert(ps, Revert{Branch: "env/qa", SHA: "c2"}), "its environments: env/prod, env/new")
	assert.ErrorContains(t, CheckRevert(ps, Revert{Branch: "env/new", SHA: "c1"}), "no healthy dry SHA to go back to")
}

func TestCreateRevert(t *testing.T) {
	client := fake.NewSimpleClientset()
	rc, err := CreateRevert(context.Background(), client.RollbackV1alpha1().RevertCommits("team"), Revert{Strategy: "Web", Branch: "env/prod", SHA: "c2", Reason: "bad"}, "test")
	require.NoError(t, err)
	assert.Equal(t, "web-env-prod-", rc.GenerateName)
	assert.Equal(t, rollbackv1alpha1.RevertCommitSpec{
		PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "Web"},
		ActiveBranch:         "env/prod", DrySHA: "c2", Reason: "bad",
	}, rc.Spec)
}

func release() *rollbackv1alpha1.ManifestRelease {
	return &rollbackv1alpha1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team"},
		Status:     rollbackv1alpha1.ManifestReleaseStatus{UpgradeNumber: 3, History: []rollbackv1alpha1.ReleaseHistoryEntry{{Number: 3}, {Number: 2}, {Number: 1}}},
	}
}

func TestCheckRollback(t *testing.T) {
	mr := release()
	assert.NoError(t, CheckRollback(mr, 1))
	assert.ErrorContains(t, CheckRollback(mr, 3), "what ManifestRelease team/shop runs now")
	assert.ErrorContains(t, CheckRollback(mr, 7), "choose one of: 2, 1")
	mr.Status.History = mr.Status.History[:1]
	assert.ErrorContains(t, CheckRollback(mr, 2), "keeps no earlier snapshot")
}

func TestRollBackSetsTheAnnotation(t *testing.T) {
	client := fake.NewSimpleClientset(release())
	mr, err := RollBack(context.Background(), client.RollbackV1alpha1().ManifestReleases("team"), "shop", 2, "test")
	require.NoError(t, err)
	assert.Equal(t, "2", mr.Annotations[rollbackv1alpha1.RollbackToAnnotation])
}

func isNotFound(err error) bool {
	var status interface{ Status() metav1.Status }
	return errors.As(err, &status) && status.Status().Reason == metav1.StatusReasonNotFound
}

func conflictErr() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"}, "prod", errors.New("changed"))
}
