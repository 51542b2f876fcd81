package integration

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
)

// landDuringMerge pushes commit() to prod from the served repository's before-ref-update hook of
// the first push made once the revert branch exists: the promoter's merge of the revert, between
// its read of prod and its push. It returns the commit landed, once it is.
func (f *fixture) landDuringMerge(revertBranch string, commit func() string) func() string {
	var landed atomic.Value
	var done atomic.Bool
	f.srv.BeforeRefUpdate(func(string) {
		if done.Load() || f.repo.Branch(f.t, revertBranch) == "" {
			return
		}
		if done.CompareAndSwap(false, true) {
			landed.Store(commit())
		}
	})
	return func() string {
		v, _ := landed.Load().(string)
		return v
	}
}

// hydratedCommit writes a commit on prod deploying dry (manifests, metadata file and note), as
// a hydrator pushing straight to the branch would.
func (f *fixture) hydratedCommit(dry, image string) string {
	sha := f.repo.CommitFiles(f.t, "prod", map[string]string{
		"hydrator.metadata": string(hydratorNote(dry)), "manifest.yaml": "env: prod\nimage: " + image + "\n",
	}, "hydrate "+dry[:7]+" straight to prod")
	f.repo.AddNote(f.t, "refs/notes/hydrator.metadata", sha, string(hydratorNote(dry)))
	return sha
}

// A fix forward pushed to prod while the promoter merges the revert (its push in flight) is
// never overwritten: the merge is refused, the RevertCommit ends Superseded naming the fix's dry
// commit, its pull request is closed, and prod keeps the fix.
func TestFixPushedDuringTheRevertsMergeSupersedesIt(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	d3 := f.dryCommit("web 3, the fix")
	fix := f.landDuringMerge(revertcommit.RevertBranch("prod", "undo-web-2"), func() string { return f.hydratedCommit(d3, "web:3") })
	startRollback(t, env.Config, f.ns, time.Second)

	f.revert("undo-web-2", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.BadDrySHA = h.d2 })
	rc := f.waitRevert("undo-web-2", "superseded", inPhase(rollbackv1alpha1.RevertSuperseded))

	require.NotEmpty(t, fix(), "the fix landed during the merge")
	assert.Equal(t, fix(), f.repo.Branch(t, "prod"), "prod keeps the fix: nothing merged over it")
	assert.Zero(t, f.revertCommitsIn("prod", string(rc.UID)), "no revert commit reached prod")
	ready := readyCondition(rc)
	require.NotNil(t, ready)
	assert.Equal(t, "FixedForward", ready.Reason)
	assert.Contains(t, ready.Message, text.ShortSHA(d3), "the message names the fix's dry commit")
	pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(f.ctx, revertcommit.PullRequestName("app", "prod"), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promoterv1alpha1.PullRequestClosed, pr.Spec.State, "the revert's pull request is closed")
	assert.NotEmpty(t, f.events(revertcommit.EventRollbackSuperseded))
	assert.Empty(t, f.events(revertcommit.EventRollbackMerged))
}

// A commit pushed to prod during the merge that still deploys the bad dry commit (a re-hydration)
// leaves prod as bad as before: the revert is written again on the new tip and merged there, and
// the re-hydration stays in prod's history.
func TestBadCommitPushedDuringTheRevertsMergeIsRevertedOnTheNewTip(t *testing.T) {
	f := newFixture(t)
	h := healthyThenBad(f)
	again := f.landDuringMerge(revertcommit.RevertBranch("prod", "undo-web-2"), func() string { return f.hydratedCommit(h.d2, "web:2-rehydrated") })
	startRollback(t, env.Config, f.ns, time.Second)

	f.revert("undo-web-2", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.BadDrySHA = h.d2 })
	rc := f.waitRevert("undo-web-2", "merged", inPhase(rollbackv1alpha1.RevertMerged))

	require.NotEmpty(t, again(), "the bad commit landed during the merge")
	tip := f.repo.Branch(t, "prod")
	assert.Equal(t, rc.Status.RevertSHA, tip, "the new revert commit fast-forwards prod")
	assert.Equal(t, again(), rc.Status.BaseSHA, "written on the new tip")
	assert.Equal(t, h.healthyTree, f.treeOf("prod"), "prod runs the healthy manifests")
	assert.True(t, f.repo.IsAncestor(t, again(), tip), "the commit pushed meanwhile stays in history")
	assert.Equal(t, 1, f.revertCommitsIn("prod", string(rc.UID)), "one revert commit reached prod")
	var replanned bool
	for _, e := range f.events(revertcommit.EventRollbackReplanned) {
		replanned = replanned || strings.Contains(e.Message, text.ShortSHA(again()))
	}
	assert.True(t, replanned, "an Event says the revert was written again on the new tip")
}

func readyCondition(rc *rollbackv1alpha1.RevertCommit) *metav1.Condition {
	for i := range rc.Status.Conditions {
		if rc.Status.Conditions[i].Type == "Ready" {
			return &rc.Status.Conditions[i]
		}
	}
	return nil
}
