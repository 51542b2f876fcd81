package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
	"github.com/sluicehq/sluice/testenv"
)

// Two RevertCommits of prod created at once, with two rollback-controllers running (as two
// replicas, or two shards, would), 20 times over: each time exactly one is merged and the other
// ends Superseded naming it. Between rounds prod is put back on the bad commit, and the next
// round claims the environment from the finished revert of the last one.
func TestTwoRevertsOfOneEnvironmentAtOnceMergeOnce(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	bad := f.repo.Branch(t, "prod")
	startRollback(t, env.Config, f.ns, time.Second)
	startRollback(t, env.Config, f.ns, time.Second)

	for round := range 20 {
		f.repo.SetBranch(t, "prod", bad)
		names := []string{fmt.Sprintf("a-%d", round), fmt.Sprintf("b-%d", round)}
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Go(func() {
				_, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Create(f.ctx, &rollbackv1alpha1.RevertCommit{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"},
						ActiveBranch: "prod", BadDrySHA: h.d2},
				}, metav1.CreateOptions{})
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		var merged, superseded []*rollbackv1alpha1.RevertCommit
		var ends []any
		for _, name := range names {
			rc := f.waitRevert(name, "over", func(rc *rollbackv1alpha1.RevertCommit) bool { return revertcommit.Final(rc.Status.Phase) })
			ends = append(ends, name, statusOf(rc))
			switch rc.Status.Phase {
			case rollbackv1alpha1.RevertMerged:
				merged = append(merged, rc)
			case rollbackv1alpha1.RevertSuperseded:
				superseded = append(superseded, rc)
			}
		}
		require.Len(t, merged, 1, "round %d: exactly one merged: %+v", round, ends)
		require.Len(t, superseded, 1, "round %d: the other superseded", round)
		assert.Contains(t, readyCondition(superseded[0]).Message, merged[0].Name, "round %d: names the revert that holds the claim", round)
		assert.Equal(t, merged[0].Status.RevertSHA, f.repo.Branch(t, "prod"), "round %d: one revert commit on prod", round)
		assert.Equal(t, h.healthyTree, f.treeOf("prod"), "round %d", round)
		f.waitPullRequestDone(revertcommit.PullRequestName("app", "prod"))
	}
}

// waitPullRequestDone waits until the promoter has finished with the environment's PullRequest:
// recorded as merged or closed, or gone. A revert ends as soon as git says so (its commit on the
// branch, or the branch restored by another), a moment before the promoter records it; putting the
// branch back on the old base inside that moment would leave a request asked to merge on its own
// base again, and the promoter would rightly merge it.
func (f *fixture) waitPullRequestDone(name string) {
	f.t.Helper()
	var last *promoterv1alpha1.PullRequest
	err := testenv.Wait(f.ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
		last = pr
		return pr.Status.State == promoterv1alpha1.PullRequestMerged || pr.Status.State == promoterv1alpha1.PullRequestClosed, nil
	})
	require.NoError(f.t, err, "PullRequest %s merged or closed; last %+v", name, last)
}
