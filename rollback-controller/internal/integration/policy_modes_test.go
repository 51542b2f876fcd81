package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
)

// policyWith creates RollbackPolicy "prod" as policy does (no failure threshold, an hour's
// window and cooldown), changed by mutate.
func (f *fixture) policyWith(mutate func(*rollbackv1alpha1.RollbackPolicySpec)) {
	f.t.Helper()
	spec := rollbackv1alpha1.RollbackPolicySpec{
		PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"},
		Environments:         []string{"prod"},
		Trigger: rollbackv1alpha1.RollbackTriggerSpec{
			CommitStatuses:   []rollbackv1alpha1.CommitStatusKey{{Key: "health"}},
			FailureThreshold: &metav1.Duration{}, Window: &metav1.Duration{Duration: time.Hour},
		},
		Cooldown: &metav1.Duration{Duration: time.Hour},
	}
	mutate(&spec)
	_, err := env.Sluice.RollbackV1alpha1().RollbackPolicies(f.ns).Create(f.ctx, &rollbackv1alpha1.RollbackPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: spec,
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

// A RollbackPolicy naming a required check makes reverts that carry it: the revert the failing
// health check starts waits with its pull request open until the check passes on the revert
// commit, then merges.
func TestPolicyRevertWaitsForThePolicysCheck(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("prod")
	f.strategy("prod")
	startPromoter(t, f.ns)
	startRollback(t, env.Config, f.ns, time.Second)
	f.policyWith(func(s *rollbackv1alpha1.RollbackPolicySpec) {
		s.RequiredCommitStatuses = []rollbackv1alpha1.CommitStatusKey{{Key: "kubelint"}}
	})
	d1 := f.dryCommit("web 1")
	healthy := f.promote("prod", d1, "web:1", success)
	d2 := f.dryCommit("web 2")
	bad := f.promote("prod", d2, "web:2", failure)

	name := rollbackpolicy.RevertCommitName("prod", "prod", d2)
	rc := f.waitRevert(name, "waiting for the policy's check", func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := conditions.Get(rc.Status.Conditions, conditions.Ready)
		return rc.Status.Phase == rollbackv1alpha1.RevertOpen && c != nil && c.Reason == "WaitingForChecks"
	})
	assert.Equal(t, []rollbackv1alpha1.CommitStatusKey{{Key: "kubelint"}}, rc.Spec.RequiredCommitStatuses, "the policy's check is the revert's")
	assert.False(t, rc.Spec.BypassGates)
	f.setStatus("kubelint", rc.Status.RevertSHA, failure, "a manifest fails lint")
	f.waitRevert(name, "still waiting, the check failing", func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := conditions.Get(rc.Status.Conditions, conditions.Ready)
		return c != nil && strings.Contains(c.Message, "kubelint (failure)")
	})
	assert.Equal(t, bad.Active.HydratedSHA, f.repo.Branch(t, "prod"), "nothing merged while the check fails")

	f.setStatus("kubelint", rc.Status.RevertSHA, success, "clean")
	rc = f.waitRevert(name, "merged once the check passed", inPhase(rollbackv1alpha1.RevertMerged))
	assert.Equal(t, rc.Status.RevertSHA, f.repo.Branch(t, "prod"))
	assert.Equal(t, f.repo.ReadCommit(t, healthy.Active.HydratedSHA).TreeHash.String(), f.treeOf("prod"))
}

// closeGate holds strategy app as a closed Gate does: it names its gates and is suspended.
func (f *fixture) closeGate(reason string) {
	f.t.Helper()
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, gate.GatesAnnotation, "freeze")
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, suspend.Annotation, reason)
	})
	require.NoError(f.t, err)
}

// A RollbackPolicy with bypassGates makes reverts that merge through a closed Gate (a freeze),
// and the bypass is recorded in the RevertCommit's status and in an Event; without it, the
// policy's revert waits for the Gate.
func TestPolicyRevertBypassesAClosedGateOnlyWhenThePolicySaysSo(t *testing.T) {
	for _, bypass := range []bool{false, true} {
		t.Run(map[bool]string{false: "held", true: "bypassed"}[bypass], func(t *testing.T) {
			f := newFixture(t)
			f.bootstrap("prod")
			f.strategy("prod")
			startPromoter(t, f.ns)
			startRollback(t, env.Config, f.ns, time.Second)
			f.policyWith(func(s *rollbackv1alpha1.RollbackPolicySpec) { s.BypassGates = bypass })
			d1 := f.dryCommit("web 1")
			f.promote("prod", d1, "web:1", success)
			d2 := f.dryCommit("web 2")
			bad := f.hydrate(d2, "web:2", "prod")
			st := f.waitEnv("prod", "promoted to d2", testenv.PromotedTo(d2))
			require.Equal(t, bad["prod"], st.Active.HydratedSHA)
			f.closeGate("change freeze until Monday")
			f.setStatus("health", st.Active.HydratedSHA, failure, "web 2 crashes")

			name := rollbackpolicy.RevertCommitName("prod", "prod", d2)
			if !bypass {
				rc := f.waitRevert(name, "held by the Gate", func(rc *rollbackv1alpha1.RevertCommit) bool {
					c := conditions.Get(rc.Status.Conditions, conditions.Ready)
					return rc.Status.Phase == rollbackv1alpha1.RevertOpen && c != nil && c.Reason == "HeldByGate"
				})
				assert.False(t, rc.Spec.BypassGates)
				assert.Contains(t, readyCondition(rc).Message, "change freeze until Monday")
				assert.Equal(t, st.Active.HydratedSHA, f.repo.Branch(t, "prod"), "nothing merged through the freeze")
				assert.Empty(t, rc.Status.GateBypass)
				return
			}
			rc := f.waitRevert(name, "merged through the Gate", inPhase(rollbackv1alpha1.RevertMerged))
			assert.True(t, rc.Spec.BypassGates, "the policy's bypass is the revert's")
			assert.Contains(t, rc.Status.GateBypass, "change freeze until Monday", "status records the bypass")
			assert.Equal(t, rc.Status.RevertSHA, f.repo.Branch(t, "prod"))
			require.NoError(t, testenv.Wait(f.ctx, 20*time.Second, func(context.Context) (bool, error) {
				return len(f.events(revertcommit.EventGateBypassed)) == 1, nil
			}), "one GateBypassed Event")
		})
	}
}
