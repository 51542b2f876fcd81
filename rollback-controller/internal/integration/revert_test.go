package integration

import (
	"context"
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
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
	"github.com/sluicehq/sluice/testenv"
)

const (
	success = commitstatusv1alpha1.CommitStatusSuccess
	failure = commitstatusv1alpha1.CommitStatusFailure
)

// prodHistory is prod after a healthy and a bad promotion.
type prodHistory struct {
	d0, d1, d2            string // dry commits: bootstrap, healthy, bad
	healthy, bad          promoterv1alpha1.EnvironmentStatus
	healthyTree, d0Commit string
}

// healthyThenBad promotes d1 (healthy) then d2 (failing) into prod, with the promoter running.
func healthyThenBad(f *fixture) prodHistory {
	f.t.Helper()
	var h prodHistory
	h.d0 = f.bootstrap("prod")
	h.d0Commit = f.repo.Branch(f.t, "prod")
	f.strategy("prod")
	startPromoter(f.t, f.ns, f.promoterFlags()...)
	h.d1 = f.dryCommit("web 1")
	h.healthy = f.promote("prod", h.d1, "web:1", success)
	h.healthyTree = f.repo.ReadCommit(f.t, h.healthy.Active.HydratedSHA).TreeHash.String()
	h.d2 = f.dryCommit("web 2")
	h.bad = f.promote("prod", h.d2, "web:2", failure)
	return h
}

// treeOf is the tree of branch's tip.
func (f *fixture) treeOf(branch string) string {
	return f.repo.ReadCommit(f.t, f.repo.Branch(f.t, branch)).TreeHash.String()
}

// A RevertCommit without a dry SHA takes prod back to the newest healthy dry SHA that is not the
// one it runs: one commit with that tree, its note naming it, through a merged PullRequest.
func TestManualRevertToTheLastHealthyDrySHA(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)

	f.revert("bad-web-2", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.Reason = "INC-42: web 2 crashes" })
	rc := f.waitRevert("bad-web-2", "merged", inPhase(rollbackv1alpha1.RevertMerged))

	st := rc.Status
	assert.Equal(t, h.d2, st.BadDrySHA)
	assert.Equal(t, h.d1, st.TargetDrySHA)
	assert.Equal(t, h.healthy.Active.HydratedSHA, st.TargetHydratedSHA)
	assert.Equal(t, "prod-revert-bad-web-2", st.RevertBranch)
	assert.False(t, st.MergedExternally)
	require.NotNil(t, st.PullRequest)
	assert.Equal(t, revertcommit.PullRequestName("app", "prod"), st.PullRequest.Name)

	// git: prod's tip is the revert commit, on top of the bad commit, with the healthy tree.
	tip := f.repo.Branch(t, "prod")
	assert.Equal(t, st.RevertSHA, tip, "the revert fast-forwards prod")
	revert := f.repo.ReadCommit(t, tip)
	assert.Equal(t, h.healthyTree, revert.TreeHash.String(), "the whole healthy state, metadata file included")
	require.Len(t, revert.ParentHashes, 1)
	assert.Equal(t, h.bad.Active.HydratedSHA, revert.ParentHashes[0].String())
	assert.Equal(t, h.d2, git.Trailer(revert.Message, rollbackv1alpha1.TrailerRevertedDrySHA))
	assert.Equal(t, f.ns+"/bad-web-2", git.Trailer(revert.Message, rollbackv1alpha1.TrailerRevertCommit))
	assert.Contains(t, revert.Message, "INC-42: web 2 crashes")
	assert.Equal(t, 1, f.revertCommitsIn("prod", string(rc.UID)))

	// The promoter reads the note: prod runs d1 again.
	f.refresh("after the revert")
	f.waitEnv("prod", "back on d1", testenv.ActiveOn(h.d1))

	prs := f.pullRequests()
	var revertPR *promoterv1alpha1.PullRequest
	for i := range prs {
		if prs[i].Name == st.PullRequest.Name {
			revertPR = &prs[i]
		}
	}
	require.NotNil(t, revertPR)
	assert.Equal(t, "prod-revert-bad-web-2", revertPR.Spec.SourceBranch)
	assert.Equal(t, "prod", revertPR.Spec.TargetBranch)
	assert.Equal(t, promoterv1alpha1.PullRequestMerged, revertPR.Status.State)
	assert.True(t, metav1.IsControlledBy(revertPR, rc))
	require.NoError(t, testenv.Wait(f.ctx, 20*time.Second, func(context.Context) (bool, error) {
		return len(f.events(revertcommit.EventRollbackStarted)) == 1 && len(f.events(revertcommit.EventRollbackMerged)) == 1, nil
	}))
}

// A promoter sharded by label merges the revert: its PullRequest carries the strategy's labels.
func TestRevertThroughAShardedPromoter(t *testing.T) {
	f := newFixture(t)
	f.shard = "a"
	h := healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)

	f.revert("sharded", "prod", nil)
	rc := f.waitRevert("sharded", "merged", inPhase(rollbackv1alpha1.RevertMerged))
	assert.Equal(t, h.d1, rc.Status.TargetDrySHA)
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(f.ctx, rc.Status.PullRequest.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", pr.Labels["shard"])
	assert.Equal(t, "sharded", pr.Labels[rollbackv1alpha1.RevertCommitLabel])
}

// A RevertCommit naming a dry SHA goes back to it, even one never recorded healthy.
func TestManualRevertToANamedDrySHA(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)

	f.revert("back-to-d0", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.DrySHA = h.d0 })
	rc := f.waitRevert("back-to-d0", "merged", inPhase(rollbackv1alpha1.RevertMerged))

	assert.Equal(t, h.d0, rc.Status.TargetDrySHA)
	assert.Equal(t, h.d0Commit, rc.Status.TargetHydratedSHA)
	assert.Equal(t, f.repo.ReadCommit(t, h.d0Commit).TreeHash.String(), f.treeOf("prod"))
	f.refresh("after the revert")
	f.waitEnv("prod", "back on d0", testenv.ActiveOn(h.d0))
}

// With autoMerge false the revert waits for a person; a merge they make outside Sluice (here a
// push of the revert commit to prod) is seen, and the revert is done.
func TestRevertWaitsForAPersonAndSeesAMergeOutsideSluice(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)

	no := false
	f.revert("by-hand", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.AutoMerge = &no })
	rc := f.waitRevert("by-hand", "waiting for a person", func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := conditions.Get(rc.Status.Conditions, conditions.Ready)
		return rc.Status.Phase == rollbackv1alpha1.RevertOpen && c != nil && c.Reason == "WaitingForMerge"
	})
	assert.Contains(t, conditions.Get(rc.Status.Conditions, conditions.Ready).Message, "waits for a person to merge it")
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(f.ctx, rc.Status.PullRequest.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, pr.Spec.State, "Sluice does not ask for the merge")
	assert.Equal(t, h.bad.Active.HydratedSHA, f.repo.Branch(t, "prod"), "prod is untouched while the revert waits")

	// A person fast-forwards prod to the revert branch with git.
	f.repo.SetBranch(t, "prod", rc.Status.RevertSHA)
	rc = f.waitRevert("by-hand", "merged", inPhase(rollbackv1alpha1.RevertMerged))
	assert.True(t, rc.Status.MergedExternally)
	assert.Equal(t, rc.Status.RevertSHA, rc.Status.MergeSHA)
	assert.Equal(t, h.healthyTree, f.treeOf("prod"))
}

// After a revert merges, the promoter does not promote the reverted dry SHA into prod again, even
// hydrated anew; a newer dry commit (a fix forward) promotes, and lifting the hold lets the bad
// one through again.
func TestRevertedDrySHAIsHeldAndAFixForwardPromotes(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)
	f.revert("bad-web-2", "prod", nil)
	f.waitRevert("bad-web-2", "merged", inPhase(rollbackv1alpha1.RevertMerged))
	f.refresh("after the revert")
	f.waitEnv("prod", "back on d1", testenv.ActiveOn(h.d1))

	// The hydrator renders d2 again (a new commit on prod-next): held.
	f.hydrate(h.d2, "web:2", "prod")
	held := f.waitEnv("prod", "held", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Proposed.DrySHA == h.d2 && strings.Contains(e.Blocked, "bad-web-2")
	})
	assert.Equal(t, h.d1, held.Active.DrySHA)

	// A fix forward promotes.
	d3 := f.dryCommit("web 3")
	f.promote("prod", d3, "web:3", success)

	// Lifting the hold lets the reverted dry SHA through again.
	_, err := testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().RevertCommits(f.ns), "bad-web-2", func(rc *rollbackv1alpha1.RevertCommit) {
		metav1.SetMetaDataAnnotation(&rc.ObjectMeta, rollbackv1alpha1.LiftHoldAnnotation, "web 2 was fine; the alert was wrong")
	})
	require.NoError(t, err)
	f.hydrate(h.d2, "web:2", "prod")
	f.waitEnv("prod", "d2 promoted once the hold is lifted", testenv.PromotedTo(h.d2))
}

// A revert waiting for a person ends Superseded when a fix forward lands first: merging it then
// would undo the fix.
func TestAWaitingRevertIsDroppedWhenAFixForwardLands(t *testing.T) {
	f := newFixture(t)
	healthyThenBad(f)
	startRollback(t, env.Config, f.ns, time.Second)
	no := false
	f.revert("too-late", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.AutoMerge = &no })
	rc := f.waitRevert("too-late", "waiting for a person", inPhase(rollbackv1alpha1.RevertOpen))

	d3 := f.dryCommit("web 3, the fix")
	fixed := f.promote("prod", d3, "web:3", success)
	rc = f.waitRevert("too-late", "superseded", inPhase(rollbackv1alpha1.RevertSuperseded))
	assert.Contains(t, readyCondition(rc).Message, "prod moved on to dry "+d3[:7])
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(f.ctx, rc.Status.PullRequest.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promoterv1alpha1.PullRequestClosed, pr.Spec.State, "the revert's pull request is closed")
	require.NoError(t, testenv.Wait(f.ctx, 30*time.Second, func(context.Context) (bool, error) {
		pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(f.ctx, rc.Status.PullRequest.Name, metav1.GetOptions{})
		return err == nil && pr.Status.State == promoterv1alpha1.PullRequestClosed, nil
	}))
	assert.Equal(t, fixed.Active.HydratedSHA, f.repo.Branch(t, "prod"), "the fix stays")
}
