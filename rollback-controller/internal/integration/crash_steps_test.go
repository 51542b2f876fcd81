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
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
	"github.com/sluicehq/sluice/testenv"
)

// stepTimeout bounds the wait for one step of a revert on a shared, slow machine.
const stepTimeout = time.Minute

// killStep is one run of the rollback-controller binary, killed with SIGKILL as soon as until
// holds: act, when set, runs once the process started (the test's part in that step).
type killStep struct {
	name  string
	act   func()
	until func() bool
}

// killThrough runs the rollback-controller binary once per step and kills it -9 at each, then
// starts it a last time with the same git cache and leaves it running until the test ends.
func (f *fixture) killThrough(steps []killStep) {
	f.t.Helper()
	_, bin := binaries(f.t)
	log := testenv.LogFile(f.t, "rollback-controller")
	flags := []string{"--git-cache-dir", f.t.TempDir(), "--revert-poll-interval", "1s", "--stalled-recheck-interval", "1s"}
	for i, s := range steps {
		cmd := runProcess(f.t, bin, f.ns, log, flags...)
		if s.act != nil {
			s.act()
		}
		require.NoError(f.t, testenv.Wait(f.ctx, stepTimeout, func(context.Context) (bool, error) { return s.until(), nil }),
			"kill #%d: the revert reaches %q", i+1, s.name)
		testenv.Kill9(f.t, cmd, i+1)
		f.t.Logf("kill -9 #%d at %s", i+1, s.name)
	}
	runProcess(f.t, bin, f.ns, log, flags...)
}

// revertNow reads RevertCommit name live; nil when it cannot.
func (f *fixture) revertNow(name string) *rollbackv1alpha1.RevertCommit {
	rc, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return rc
}

// revertPR reads prod's revert PullRequest live; nil when there is none.
func (f *fixture) revertPR() *promoterv1alpha1.PullRequest {
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(f.ctx, revertcommit.PullRequestName("app", "prod"), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return pr
}

// oneRevertPR asserts that one PullRequest carries a revert.
func (f *fixture) oneRevertPR() {
	f.t.Helper()
	n := 0
	for _, pr := range f.pullRequests() {
		if pr.Labels[rollbackv1alpha1.RevertCommitLabel] != "" {
			n++
		}
	}
	assert.Equal(f.t, 1, n, "one revert pull request")
}

// A revert waiting for its check, with the rollback-controller killed -9 while it waits with no
// check reported, while the check is pending, and once the check passed and the merge is asked,
// merges once: one revert commit, one pull request, nothing merged before the check passed.
func TestKill9WhileARevertWaitsForItsCheck(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	const name = "checked"
	f.revert(name, "prod", func(s *rollbackv1alpha1.RevertCommitSpec) {
		s.RequiredCommitStatuses = []rollbackv1alpha1.CommitStatusKey{{Key: "kubelint"}}
	})
	waitingFor := func(what string) func() bool {
		return func() bool {
			rc := f.revertNow(name)
			if rc == nil || rc.Status.Phase != rollbackv1alpha1.RevertOpen {
				return false
			}
			c := conditions.Get(rc.Status.Conditions, conditions.Ready)
			return c != nil && c.Reason == "WaitingForChecks" && c.ObservedGeneration == rc.Generation && strings.Contains(c.Message, what)
		}
	}
	check := func(phase commitstatusv1alpha1.CommitStatusPhase) func() {
		return func() { f.setStatus("kubelint", f.revertNow(name).Status.RevertSHA, phase, string(phase)) }
	}
	f.killThrough([]killStep{
		{name: "waiting for a check not reported", until: waitingFor("kubelint (not reported)")},
		{name: "waiting for the check pending", act: check(commitstatusv1alpha1.CommitStatusPending), until: waitingFor("kubelint (pending)")},
		{name: "merge asked once the check passed", act: check(commitstatusv1alpha1.CommitStatusSuccess), until: func() bool {
			pr := f.revertPR()
			return pr != nil && pr.Spec.State == promoterv1alpha1.PullRequestMerged
		}},
	})
	rc := f.waitRevert(name, "merged after the kills", inPhase(rollbackv1alpha1.RevertMerged))

	assert.Equal(t, rc.Status.RevertSHA, f.repo.Branch(t, "prod"), "one merge fast-forwards prod to the revert commit")
	assert.Equal(t, h.bad.Active.HydratedSHA, rc.Status.BaseSHA, "written once, on the bad commit")
	assert.Equal(t, 1, f.revertCommitsIn("prod", string(rc.UID)), "one revert commit")
	assert.Equal(t, h.healthyTree, f.treeOf("prod"))
	f.oneRevertPR()
	f.repo.CheckConnectivity(t)
}

// A re-hydration of the bad dry commit pushed to prod during the promoter's merge, with the
// rollback-controller killed -9 as it lands, once the revert was written again on the new tip,
// and once the PullRequest asks for that commit: the revert merges once, on the new tip.
func TestKill9WhileARevertIsReplannedOnAMovedBase(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	const name = "replanned"
	again := f.landDuringMerge(revertcommit.RevertBranch("prod", name), func() string { return f.hydratedCommit(h.d2, "web:2-rehydrated") })
	f.revert(name, "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.BadDrySHA = h.d2 })
	f.killThrough([]killStep{
		{name: "the re-hydration landed during the merge", until: func() bool { return again() != "" }},
		{name: "the revert written again on the new tip", until: func() bool {
			tip := f.repo.Branch(t, revertcommit.RevertBranch("prod", name))
			if tip == "" || again() == "" {
				return false
			}
			c := f.repo.ReadCommit(t, tip)
			return len(c.ParentHashes) == 1 && c.ParentHashes[0].String() == again()
		}},
		{name: "the PullRequest asks for the new revert commit", until: func() bool {
			pr := f.revertPR()
			return pr != nil && pr.Spec.ExpectedBaseSHA == again()
		}},
	})
	rc := f.waitRevert(name, "merged after the kills", inPhase(rollbackv1alpha1.RevertMerged))

	tip := f.repo.Branch(t, "prod")
	assert.Equal(t, rc.Status.RevertSHA, tip, "the new revert commit fast-forwards prod")
	assert.Equal(t, again(), rc.Status.BaseSHA, "written on the new tip")
	assert.True(t, f.repo.IsAncestor(t, again(), tip), "the commit pushed meanwhile stays in history")
	assert.Equal(t, 1, f.revertCommitsIn("prod", string(rc.UID)), "one revert commit reached prod")
	assert.Equal(t, h.healthyTree, f.treeOf("prod"))
	f.oneRevertPR()
	f.repo.CheckConnectivity(t)
}

// A fix forward pushed to prod during the promoter's merge, with the rollback-controller killed
// -9 as it lands and once the revert's pull request is closed (maybe before its status says
// Superseded): the revert ends Superseded for the fix, not Failed for a closed pull request, and
// prod keeps the fix.
func TestKill9WhileARevertIsSuperseded(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	const name = "superseded"
	d3 := f.dryCommit("web 3, the fix")
	fix := f.landDuringMerge(revertcommit.RevertBranch("prod", name), func() string { return f.hydratedCommit(d3, "web:3") })
	f.revert(name, "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.BadDrySHA = h.d2 })
	f.killThrough([]killStep{
		{name: "the fix landed during the merge", until: func() bool { return fix() != "" }},
		{name: "the revert's pull request closed", until: func() bool {
			pr := f.revertPR()
			return pr != nil && pr.Spec.State == promoterv1alpha1.PullRequestClosed
		}},
	})
	rc := f.waitRevert(name, "over after the kills", func(rc *rollbackv1alpha1.RevertCommit) bool { return revertcommit.Final(rc.Status.Phase) })

	require.Equal(t, rollbackv1alpha1.RevertSuperseded, rc.Status.Phase, "%+v", rc.Status)
	assert.Equal(t, "FixedForward", readyCondition(rc).Reason)
	assert.Contains(t, readyCondition(rc).Message, d3[:7])
	assert.Equal(t, fix(), f.repo.Branch(t, "prod"), "prod keeps the fix")
	assert.Zero(t, f.revertCommitsIn("prod", string(rc.UID)), "no revert commit reached prod")
	f.oneRevertPR()
}
