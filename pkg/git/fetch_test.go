package git_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

func TestFetchBringsOnlyTheRequestedBranches(t *testing.T) {
	f := newFixture(t)
	devSHA := f.hydrated(t, "dev", dry(1), "dev")
	featureSHA := f.remote.CommitFiles(t, "feature", map[string]string{"secret-plan.txt": "not for the cache"}, "feature work\n")
	repo := f.open(t)

	require.NoError(t, repo.Fetch(ctx(t), "dev"))

	got, err := repo.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, devSHA, got)
	_, err = repo.Resolve("feature")
	assert.ErrorIs(t, err, git.ErrBranchNotFound, "an unrequested branch must not be fetched")
	_, err = repo.Commit(featureSHA)
	assert.Error(t, err, "the objects of an unrequested branch must not be in the cache")
}

func TestFetchReportsMissingBranchesAndFetchesTheOthers(t *testing.T) {
	f := newFixture(t)
	devSHA := f.hydrated(t, "dev", dry(1), "dev")
	repo := f.open(t)

	err := repo.Fetch(ctx(t), "dev", "staging", "prod")

	var missing *git.BranchNotFoundError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, []string{"prod", "staging"}, missing.Branches)
	assert.ErrorIs(t, err, git.ErrBranchNotFound)
	got, err := repo.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, devSHA, got)
}

func TestFetchFollowsRewrittenAndDeletedBranches(t *testing.T) {
	f := newFixture(t)
	first := f.hydrated(t, "dev-next", dry(1), "one")
	f.hydrated(t, "dev-next", dry(2), "two")
	f.hydrated(t, "gone", dry(3), "three")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev-next", "gone"))

	// The hydrator rewrites its branch to a commit that does not descend from the old head.
	f.remote.SetBranch(t, "dev-next", first)
	rewritten := f.hydrated(t, "dev-next", dry(4), "four")
	f.remote.DeleteBranch(t, "gone")

	err := repo.Fetch(ctx(t), "dev-next", "gone")
	assert.ErrorIs(t, err, git.ErrBranchNotFound)
	got, err := repo.Resolve("dev-next")
	require.NoError(t, err)
	assert.Equal(t, rewritten, got)
	_, err = repo.Resolve("gone")
	assert.ErrorIs(t, err, git.ErrBranchNotFound, "a branch deleted on the remote must leave the cache")
}

func TestFetchWithNothingNewAsksForNoObjects(t *testing.T) {
	f := newFixture(t)
	f.hydrated(t, "dev", dry(1), "dev")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev"))
	before := f.srv.Uploads()

	require.NoError(t, repo.Fetch(ctx(t), "dev"))
	assert.Equal(t, before, f.srv.Uploads(), "an unchanged branch needs only the ref advertisement")

	next := f.hydrated(t, "dev", dry(2), "dev 2")
	require.NoError(t, repo.Fetch(ctx(t), "dev"))
	assert.Equal(t, before+1, f.srv.Uploads())
	got, err := repo.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, next, got)
}

func TestFetchRejectsBadBranchNames(t *testing.T) {
	f := newFixture(t)
	repo := f.open(t)
	for _, name := range []string{"", "a..b", "with space", "ends.lock"} {
		assert.Error(t, repo.Fetch(ctx(t), name), name)
	}
}
