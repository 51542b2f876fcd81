package git_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

// A revert merged into prod after prod-next's proposal was made: prod-next catches up with a
// commit that keeps its manifests, and prod then fast-forwards to it.
func TestCatchUpMakesTheProposalFastForwardTheTarget(t *testing.T) {
	f := newFixture(t)
	base := f.hydrated(t, "prod", dry(1), "one")
	f.remote.SetBranch(t, "prod-next", base)
	proposed := f.hydrated(t, "prod-next", dry(2), "two")
	revert := f.remote.CommitFiles(t, "prod", map[string]string{"app.yaml": "reverted"}, "Revert one\n")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "prod", "prod-next"))

	res, err := repo.CatchUp(ctx(t), "prod-next", "prod", proposed, git.MergeOptions{})

	require.NoError(t, err)
	assert.Equal(t, git.MergeCommit, res.Kind)
	assert.Equal(t, res.SHA, f.remote.Branch(t, "prod-next"), "pushed onto the proposal's branch")
	assert.Equal(t, revert, f.remote.Branch(t, "prod"), "the target is not touched")
	caught := f.remote.ReadCommit(t, res.SHA)
	assert.Equal(t, []string{revert, proposed}, []string{caught.ParentHashes[0].String(), caught.ParentHashes[1].String()})
	assert.Equal(t, f.remote.ReadCommit(t, proposed).TreeHash, caught.TreeHash, "the proposal's manifests, unchanged")
	require.NoError(t, repo.Fetch(ctx(t), "prod", "prod-next"))
	merged, err := repo.MergeAndPush(ctx(t), "prod-next", "prod", revert, 0, git.MergeOptions{})
	require.NoError(t, err)
	assert.Equal(t, git.MergeFastForward, merged.Kind)
	f.remote.CheckConnectivity(t)
}

func TestCatchUpLeavesAProposalThatContainsTheTarget(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "prod", dry(1), "one")
	f.remote.SetBranch(t, "prod-next", active)
	proposed := f.hydrated(t, "prod-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "prod", "prod-next"))

	res, err := repo.CatchUp(ctx(t), "prod-next", "prod", proposed, git.MergeOptions{})

	require.NoError(t, err)
	assert.Equal(t, git.MergeFastForward, res.Kind)
	assert.Equal(t, proposed, f.remote.Branch(t, "prod-next"), "nothing pushed")
}

// The hydrator replaced the proposal after it was checked: the catch-up does not build on it.
func TestCatchUpRefusesAProposalOtherThanTheOneChecked(t *testing.T) {
	f := newFixture(t)
	base := f.hydrated(t, "prod", dry(1), "one")
	f.remote.SetBranch(t, "prod-next", base)
	checked := f.hydrated(t, "prod-next", dry(2), "two")
	f.remote.CommitFiles(t, "prod", map[string]string{"app.yaml": "reverted"}, "Revert one\n")
	newer := f.hydrated(t, "prod-next", dry(3), "three")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "prod", "prod-next"))

	_, err := repo.CatchUp(ctx(t), "prod-next", "prod", checked, git.MergeOptions{})

	require.Error(t, err)
	assert.True(t, errors.Is(err, git.ErrSourceMoved), "%v", err)
	assert.Equal(t, newer, f.remote.Branch(t, "prod-next"))
}
