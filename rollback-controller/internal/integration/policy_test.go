package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
)

// policy creates RollbackPolicy "prod" over strategy app's prod, on the health key.
func (f *fixture) policy(threshold, window, cooldown time.Duration) {
	f.t.Helper()
	_, err := env.Sluice.RollbackV1alpha1().RollbackPolicies(f.ns).Create(f.ctx, &rollbackv1alpha1.RollbackPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: rollbackv1alpha1.RollbackPolicySpec{
			PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"},
			Environments:         []string{"prod"},
			Trigger: rollbackv1alpha1.RollbackTriggerSpec{
				CommitStatuses:   []rollbackv1alpha1.CommitStatusKey{{Key: "health"}},
				FailureThreshold: &metav1.Duration{Duration: threshold},
				Window:           &metav1.Duration{Duration: window},
			},
			Cooldown: &metav1.Duration{Duration: cooldown},
		},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

// waitPolicy waits until prod's entry in the policy's status says what.
func (f *fixture) waitPolicy(what string) rollbackv1alpha1.PolicyEnvironmentStatus {
	f.t.Helper()
	return f.waitPolicyThat(what, func(e rollbackv1alpha1.PolicyEnvironmentStatus) bool { return strings.Contains(e.Message, what) })
}

// waitPolicyThat waits until prod's entry in the policy's status satisfies cond.
func (f *fixture) waitPolicyThat(what string, cond func(rollbackv1alpha1.PolicyEnvironmentStatus) bool) rollbackv1alpha1.PolicyEnvironmentStatus {
	f.t.Helper()
	var last rollbackv1alpha1.PolicyEnvironmentStatus
	err := testenv.Wait(f.ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := env.Sluice.RollbackV1alpha1().RollbackPolicies(f.ns).Get(ctx, "prod", metav1.GetOptions{})
		if err != nil || len(p.Status.Environments) == 0 {
			return false, err
		}
		last = p.Status.Environments[0]
		return cond(last), nil
	})
	require.NoError(f.t, err, "policy: %s; last %+v", what, last)
	return last
}

// recordsRollback is a policy status that recorded the rollback of bad by RevertCommit name.
func recordsRollback(name, bad string) func(rollbackv1alpha1.PolicyEnvironmentStatus) bool {
	return func(e rollbackv1alpha1.PolicyEnvironmentStatus) bool {
		return e.LastRollback != nil && e.LastRollback.RevertCommit == name && len(e.RevertedDrySHAs) > 0 && e.RevertedDrySHAs[0] == bad
	}
}

func (f *fixture) revertCommits() []rollbackv1alpha1.RevertCommit {
	list, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).List(f.ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	return list.Items
}

// A failing health check on prod soon after a promotion rolls prod back to the last healthy dry
// SHA; the revert is never rolled back in turn, and a second bad change inside the cooldown is
// left to people. A fix forward promotes as usual.
func TestAutomaticRollbackAfterAFailingHealthCheck(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("prod")
	f.strategy("prod")
	startPromoter(t, f.ns)
	rb := startRollback(t, env.Config, f.ns, time.Second)
	f.policy(time.Second, time.Hour, time.Hour)

	d1 := f.dryCommit("web 1")
	healthy := f.promote("prod", d1, "web:1", success)
	healthyTree := f.repo.ReadCommit(t, healthy.Active.HydratedSHA).TreeHash.String()
	d2 := f.dryCommit("web 2")
	failing := time.Now()
	f.promote("prod", d2, "web:2", failure)

	name := rollbackpolicy.RevertCommitName("prod", "prod", d2)
	rc := f.waitRevert(name, "merged", inPhase(rollbackv1alpha1.RevertMerged))
	restored := time.Since(failing)
	assert.Equal(t, d2, rc.Spec.BadDrySHA)
	assert.Equal(t, d1, rc.Status.TargetDrySHA)
	require.NotNil(t, rc.Spec.Trigger)
	assert.Equal(t, "health", rc.Spec.Trigger.Key)
	assert.Equal(t, "health failed in prod on dry "+d2[:7]+": health of web:2", rc.Spec.Reason)
	assert.Equal(t, "prod", rc.Labels[rollbackv1alpha1.PolicyLabel])
	assert.Equal(t, healthyTree, f.treeOf("prod"))
	t.Logf("time to restore, failing status written to revert merged, on plain git: %s", restored.Round(time.Millisecond))

	st := f.waitPolicyThat("records the rollback", recordsRollback(name, d2))
	assert.Equal(t, []string{d2}, st.RevertedDrySHAs)
	require.NotNil(t, st.LastRollback)
	assert.Equal(t, name, st.LastRollback.RevertCommit)

	// prod now runs the revert; it failing too is left to people: no rollback of a rollback.
	f.refresh("after the rollback")
	reverted := f.waitEnv("prod", "back on d1", testenv.ActiveOn(d1))
	f.setStatus("health", reverted.Active.HydratedSHA, failure, "still broken")
	f.waitPolicy("a revert is never rolled back automatically")

	// A fix forward promotes; failing inside the cooldown, it is not rolled back.
	d3 := f.dryCommit("web 3")
	f.promote("prod", d3, "web:3", failure)
	f.waitPolicy("in cooldown after RevertCommit " + name)
	assert.Len(t, f.revertCommits(), 1, "one rollback only")

	assert.Equal(t, 1.0, counter(t, rb, "sluice_rollback_rollbacks_total", map[string]string{"trigger": "automatic", "result": "merged", "environment": "prod"}))
	n, sum := histogram(t, rb, "sluice_rollback_time_to_restore_seconds")
	assert.Equal(t, uint64(1), n)
	assert.GreaterOrEqual(t, sum, 1.0, "restored no sooner than the 1s failure threshold")
	assert.Equal(t, 1.0, counter(t, rb, "sluice_rollback_policy_decisions_total", map[string]string{"decision": "cooldown"}))
	assert.Equal(t, 1.0, counter(t, rb, "sluice_rollback_policy_decisions_total", map[string]string{"decision": "runs_a_revert"}))
}

// A failure that starts after the window is left to people.
func TestNoAutomaticRollbackOutsideTheWindow(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("prod")
	f.strategy("prod")
	startPromoter(t, f.ns)
	rb := startRollback(t, env.Config, f.ns, time.Second)
	// A window of a millisecond: any failure is seen after it closed.
	f.policy(0, time.Millisecond, time.Hour)

	d1 := f.dryCommit("web 1")
	f.promote("prod", d1, "web:1", success)
	d2 := f.dryCommit("web 2")
	f.promote("prod", d2, "web:2", failure)

	f.waitPolicy("outside the window")
	assert.Empty(t, f.revertCommits())
	assert.Equal(t, 1.0, counter(t, rb, "sluice_rollback_policy_decisions_total", map[string]string{"decision": "outside_window"}))
}

// counter sums the samples of a counter whose labels include want.
func counter(t *testing.T, rb *rollbackController, name string, want map[string]string) float64 {
	t.Helper()
	sum := 0.0
	for _, m := range metricsNamed(t, rb, name) {
		if hasLabels(m, want) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func histogram(t *testing.T, rb *rollbackController, name string) (count uint64, sum float64) {
	t.Helper()
	for _, m := range metricsNamed(t, rb, name) {
		count += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	return count, sum
}

func metricsNamed(t *testing.T, rb *rollbackController, name string) []*dto.Metric {
	t.Helper()
	families, err := rb.m.Metrics.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}
