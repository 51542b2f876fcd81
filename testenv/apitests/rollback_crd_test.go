package apitests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

func revertCommit(mut func(*rollbackv1.RevertCommitSpec)) *rollbackv1.RevertCommit {
	rc := &rollbackv1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "rc-", Namespace: "default"},
		Spec: rollbackv1.RevertCommitSpec{
			PromotionStrategyRef: rollbackv1.PromotionStrategyReference{Name: "web"},
			ActiveBranch:         "prod",
		},
	}
	if mut != nil {
		mut(&rc.Spec)
	}
	return rc
}

func TestRevertCommitValidation(t *testing.T) {
	ctx := context.Background()
	rcs := client.RollbackV1alpha1().RevertCommits("default")
	for _, tc := range []struct {
		name    string
		mut     func(*rollbackv1.RevertCommitSpec)
		wantErr string
	}{
		{name: "default target"},
		{name: "named target", mut: func(s *rollbackv1.RevertCommitSpec) { s.DrySHA, s.Reason = sha, "INC-42" }},
		{name: "short sha", mut: func(s *rollbackv1.RevertCommitSpec) { s.DrySHA = "0123456" }, wantErr: "spec.drySHA"},
		{name: "upper-case bad sha", mut: func(s *rollbackv1.RevertCommitSpec) { s.BadDrySHA = "0123456789ABCDEF0123456789ABCDEF01234567" }, wantErr: "spec.badDrySHA"},
		{name: "no branch", mut: func(s *rollbackv1.RevertCommitSpec) { s.ActiveBranch = "" }, wantErr: "spec.activeBranch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rcs.Create(ctx, revertCommit(tc.mut), metav1.CreateOptions{})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestRevertCommitSpecIsImmutableButAutoMerge(t *testing.T) {
	ctx := context.Background()
	rcs := client.RollbackV1alpha1().RevertCommits("default")
	rc, err := rcs.Create(ctx, revertCommit(nil), metav1.CreateOptions{})
	require.NoError(t, err)

	for name, mut := range map[string]func(*rollbackv1.RevertCommitSpec){
		"target set later":  func(s *rollbackv1.RevertCommitSpec) { s.DrySHA = sha },
		"bad sha set later": func(s *rollbackv1.RevertCommitSpec) { s.BadDrySHA = sha },
		"other branch":      func(s *rollbackv1.RevertCommitSpec) { s.ActiveBranch = "staging" },
		"other strategy":    func(s *rollbackv1.RevertCommitSpec) { s.PromotionStrategyRef.Name = "api" },
	} {
		next := rc.DeepCopy()
		mut(&next.Spec)
		_, err := rcs.Update(ctx, next, metav1.UpdateOptions{})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "immutable", name)
	}

	next := rc.DeepCopy()
	yes := true
	next.Spec.AutoMerge, next.Spec.Suspend = &yes, true
	_, err = rcs.Update(ctx, next, metav1.UpdateOptions{})
	require.NoError(t, err, "a person may approve a waiting revert, or pause it")
}

func TestRollbackPolicyDefaultsAndValidation(t *testing.T) {
	ctx := context.Background()
	policies := client.RollbackV1alpha1().RollbackPolicies("default")
	policy := func(mut func(*rollbackv1.RollbackPolicySpec)) *rollbackv1.RollbackPolicy {
		p := &rollbackv1.RollbackPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "p-", Namespace: "default"},
			Spec: rollbackv1.RollbackPolicySpec{
				PromotionStrategyRef: rollbackv1.PromotionStrategyReference{Name: "web"},
				Trigger:              rollbackv1.RollbackTriggerSpec{CommitStatuses: []rollbackv1.CommitStatusKey{{Key: "health"}}},
			},
		}
		if mut != nil {
			mut(&p.Spec)
		}
		return p
	}

	created, err := policies.Create(ctx, policy(nil), metav1.CreateOptions{})
	require.NoError(t, err)
	s := created.Spec
	require.NotNil(t, s.Cooldown)
	require.NotNil(t, s.Trigger.Window)
	require.NotNil(t, s.Trigger.FailureThreshold)
	require.NotNil(t, s.AutoMerge)
	assert.Equal(t, time.Hour, s.Cooldown.Duration)
	assert.Equal(t, time.Hour, s.Trigger.Window.Duration)
	assert.Equal(t, time.Minute, s.Trigger.FailureThreshold.Duration)
	assert.True(t, *s.AutoMerge)

	for name, tc := range map[string]struct {
		mut     func(*rollbackv1.RollbackPolicySpec)
		wantErr string
	}{
		"no keys":       {func(s *rollbackv1.RollbackPolicySpec) { s.Trigger.CommitStatuses = nil }, "spec.trigger.commitStatuses"},
		"bad key":       {func(s *rollbackv1.RollbackPolicySpec) { s.Trigger.CommitStatuses[0].Key = "-bad" }, "spec.trigger.commitStatuses[0].key"},
		"zero window":   {func(s *rollbackv1.RollbackPolicySpec) { s.Trigger.Window = &metav1.Duration{} }, "window must be positive"},
		"negative cool": {func(s *rollbackv1.RollbackPolicySpec) { s.Cooldown = &metav1.Duration{Duration: -time.Minute} }, "cooldown must not be negative"},
	} {
		_, err := policies.Create(ctx, policy(tc.mut), metav1.CreateOptions{})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.wantErr, name)
	}
}
