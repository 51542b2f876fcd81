package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
)

// Deleting the RevertCommit lifts the promotion hold but resets neither never-twice nor the
// cooldown: the bad dry SHA promoted again and failing again is not reverted again; the
// revert-again annotation naming it allows one more revert, once the cooldown is over.
func TestNeverTwiceSurvivesDeletingTheRevertCommit(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("prod")
	f.strategy("prod")
	startPromoter(t, f.ns)
	startRollback(t, env.Config, f.ns, time.Second)
	f.policy(time.Second, time.Hour, time.Hour)

	d1 := f.dryCommit("web 1")
	f.promote("prod", d1, "web:1", success)
	d2 := f.dryCommit("web 2")
	f.promote("prod", d2, "web:2", failure)
	first := rollbackpolicy.RevertCommitName("prod", "prod", d2)
	f.waitRevert(first, "merged", inPhase(rollbackv1alpha1.RevertMerged))
	f.waitPolicyThat("records the rollback", recordsRollback(first, d2))

	require.NoError(t, env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Delete(f.ctx, first, metav1.DeleteOptions{}))
	f.refresh("after the revert")
	f.waitEnv("prod", "back on d1", testenv.ActiveOn(d1))
	f.promote("prod", d2, "web:2", failure)
	st := f.waitPolicy("never twice")
	assert.Contains(t, st.Message, rollbackv1alpha1.RevertAgainAnnotation+"="+d2, "says how to allow a second revert")
	assert.Equal(t, []string{d2}, st.RevertedDrySHAs)
	assert.Empty(t, f.revertCommits(), "no second revert of the same dry SHA")

	_, err := testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().RollbackPolicies(f.ns), "prod", func(p *rollbackv1alpha1.RollbackPolicy) {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, rollbackv1alpha1.RevertAgainAnnotation, d2)
	})
	require.NoError(t, err)
	f.waitPolicy("in cooldown after RevertCommit " + first)
	assert.Empty(t, f.revertCommits(), "no second revert within the cooldown, though allowed")

	_, err = testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().RollbackPolicies(f.ns), "prod", func(p *rollbackv1alpha1.RollbackPolicy) {
		p.Spec.Cooldown = &metav1.Duration{}
	})
	require.NoError(t, err)
	again := rollbackpolicy.RevertCommitName("prod-again", "prod", d2)
	rc := f.waitRevert(again, "merged", inPhase(rollbackv1alpha1.RevertMerged))
	assert.Equal(t, d1, rc.Status.TargetDrySHA)
	assert.Len(t, f.revertCommits(), 1)
}
