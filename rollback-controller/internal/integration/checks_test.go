package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
)

// A revert that must pass a check waits with its pull request open while the check is pending
// on the revert commit, and merges once it succeeds.
func TestRevertWaitsForItsCheck(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)

	f.revert("undo-web-2", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) {
		s.RequiredCommitStatuses = []rollbackv1alpha1.CommitStatusKey{{Key: "kubelint"}}
	})
	rc := f.waitRevert("undo-web-2", "waiting for its check", func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := conditions.Get(rc.Status.Conditions, conditions.Ready)
		return rc.Status.Phase == rollbackv1alpha1.RevertOpen && c != nil && c.Reason == "WaitingForChecks"
	})
	f.setStatus("kubelint", rc.Status.RevertSHA, commitstatusv1alpha1.CommitStatusPending, "linting")
	rc = f.waitRevert("undo-web-2", "still waiting, the check pending", func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := conditions.Get(rc.Status.Conditions, conditions.Ready)
		return c != nil && c.Reason == "WaitingForChecks" && strings.Contains(c.Message, "kubelint (pending)")
	})
	assert.Equal(t, h.bad.Active.HydratedSHA, f.repo.Branch(t, "prod"), "nothing merged while the check is pending")
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(f.ctx, revertcommit.PullRequestName("app", "prod"), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, pr.Spec.State, "the merge is not asked for yet")

	f.setStatus("kubelint", rc.Status.RevertSHA, commitstatusv1alpha1.CommitStatusSuccess, "clean")
	rc = f.waitRevert("undo-web-2", "merged once the check passed", inPhase(rollbackv1alpha1.RevertMerged))
	assert.Equal(t, rc.Status.RevertSHA, f.repo.Branch(t, "prod"))
	assert.Equal(t, h.healthyTree, f.treeOf("prod"))
}
