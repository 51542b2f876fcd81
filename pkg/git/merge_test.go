package git_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

func TestMergeAndPushFastForwards(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", active)
	proposed := f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))

	res, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 0, git.MergeOptions{})

	require.NoError(t, err)
	assert.Equal(t, git.MergeResult{Kind: git.MergeFastForward, SHA: proposed, SourceSHA: proposed, TargetSHA: active}, res)
	assert.Equal(t, proposed, f.remote.Branch(t, "dev"))
	local, err := repo.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, proposed, local, "a successful push moves the cache's copy too")
}

func TestMergeAndPushMakesAMergeCommitWithTheSourceTree(t *testing.T) {
	f := newFixture(t)
	base := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", base)
	// An earlier promotion left a merge-like commit on dev that dev-next does not have.
	active := f.remote.CommitFiles(t, "dev", map[string]string{"only-on-dev.txt": "stale"}, "earlier promotion\n")
	proposed := f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	when := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	res, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 0, git.MergeOptions{
		Author:  git.Identity{Name: "Promoter", Email: "promoter@example.com"},
		Message: "Promote dev-next into dev\n",
		Now:     func() time.Time { return when },
	})

	require.NoError(t, err)
	assert.Equal(t, git.MergeCommit, res.Kind)
	assert.Equal(t, res.SHA, f.remote.Branch(t, "dev"))
	merge := f.remote.ReadCommit(t, res.SHA)
	assert.Equal(t, []string{active, proposed}, []string{merge.ParentHashes[0].String(), merge.ParentHashes[1].String()})
	assert.Equal(t, f.remote.ReadCommit(t, proposed).TreeHash, merge.TreeHash, "the merge takes the proposed tree whole")
	assert.Equal(t, "Promoter", merge.Author.Name)
	assert.Equal(t, "Promoter", merge.Committer.Name)
	assert.True(t, merge.Committer.When.Equal(when))
	assert.Equal(t, "Promote dev-next into dev\n", merge.Message)
	f.remote.CheckConnectivity(t)
}

func TestMergeAndPushTwiceMergesOnce(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", active)
	f.remote.CommitFiles(t, "dev", map[string]string{"x": "y"}, "diverge\n")
	active = f.remote.Branch(t, "dev")
	f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	first, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 0, git.MergeOptions{})
	require.NoError(t, err)
	pushes := f.srv.Receives()

	// A controller that crashed before recording the merge tries again from what it read.
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	again, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", first.SHA, 0, git.MergeOptions{})

	require.NoError(t, err)
	assert.Equal(t, git.MergeUpToDate, again.Kind)
	assert.Equal(t, first.SHA, again.SHA)
	assert.Equal(t, pushes, f.srv.Receives(), "nothing is pushed when the target already has the source")
	assert.Equal(t, first.SHA, f.remote.Branch(t, "dev"))
}

func TestMergeAndPushCreatesAMissingTarget(t *testing.T) {
	f := newFixture(t)
	proposed := f.hydrated(t, "prod-next", dry(1), "one")
	repo := f.open(t)
	err := repo.Fetch(ctx(t), "prod", "prod-next")
	require.ErrorIs(t, err, git.ErrBranchNotFound)

	res, err := repo.MergeAndPush(ctx(t), "prod-next", "prod", "", 0, git.MergeOptions{})

	require.NoError(t, err)
	assert.Equal(t, git.MergeFastForward, res.Kind)
	assert.Equal(t, proposed, f.remote.Branch(t, "prod"))
}

func TestPushIsACompareAndSwap(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", active)
	proposed := f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	// Someone else moves dev after we read it.
	moved := f.remote.CommitFiles(t, "dev", map[string]string{"hotfix": "1"}, "hotfix\n")

	err := repo.Push(ctx(t), "dev", proposed, active)

	var stale *git.StaleError
	require.ErrorAs(t, err, &stale)
	assert.ErrorIs(t, err, git.ErrStale)
	assert.Equal(t, git.StaleError{Branch: "dev", Expected: active, Actual: moved}, *stale)
	assert.Equal(t, moved, f.remote.Branch(t, "dev"), "a stale push must not overwrite the remote")
}

func TestPushLosingTheRaceOnTheServerIsStale(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", active)
	proposed := f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	var moved atomic.Value
	f.srv.BeforeRefUpdate(func(string) {
		// Between the client's check of the advertised refs and the server's ref update.
		moved.Store(f.remote.CommitFiles(t, "dev", map[string]string{"race": "won"}, "racing push\n"))
		f.srv.BeforeRefUpdate(nil)
	})

	err := repo.Push(ctx(t), "dev", proposed, active)

	var stale *git.StaleError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, moved.Load(), stale.Actual)
	assert.Equal(t, moved.Load(), f.remote.Branch(t, "dev"), "the server kept the winner's update")
}

func TestMergeAndPushRecoversFromANonFastForwardRace(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", active)
	proposed := f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	var moved atomic.Value
	f.srv.BeforeRefUpdate(func(string) {
		moved.Store(f.remote.CommitFiles(t, "dev", map[string]string{"race": "won"}, "racing push\n"))
		f.srv.BeforeRefUpdate(nil)
	})

	res, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 2, git.MergeOptions{ExpectedSourceSHA: proposed})

	require.NoError(t, err)
	winner := moved.Load().(string)
	assert.Equal(t, git.MergeCommit, res.Kind, "after the race dev no longer fast-forwards")
	assert.Equal(t, winner, res.TargetSHA)
	assert.Equal(t, res.SHA, f.remote.Branch(t, "dev"))
	assert.True(t, f.remote.IsAncestor(t, winner, res.SHA), "the racing commit must survive: no force push")
	assert.True(t, f.remote.IsAncestor(t, proposed, res.SHA))
	f.remote.CheckConnectivity(t)
}

func TestMergeAndPushGivesUpAfterItsRetries(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	f.srv.BeforeRefUpdate(func(string) {
		f.remote.CommitFiles(t, "dev", map[string]string{"race": time.Now().String()}, "racing push\n")
	})

	_, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 2, git.MergeOptions{})

	assert.ErrorIs(t, err, git.ErrStale)
	assert.Equal(t, int64(3), f.srv.Receives(), "one attempt and two retries")
}

func TestMergeAndPushRefusesASourceThatMoved(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.remote.SetBranch(t, "dev-next", active)
	checked := f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	f.srv.BeforeRefUpdate(func(string) {
		f.remote.CommitFiles(t, "dev", map[string]string{"race": "won"}, "racing push\n")
		f.hydrated(t, "dev-next", dry(3), "three, not checked yet")
		f.srv.BeforeRefUpdate(nil)
	})

	_, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 3, git.MergeOptions{ExpectedSourceSHA: checked})

	assert.ErrorIs(t, err, git.ErrSourceMoved)
	assert.False(t, f.remote.IsAncestor(t, f.remote.Branch(t, "dev-next"), f.remote.Branch(t, "dev")),
		"the unchecked commit must not reach dev")
}

func TestPushNeverRewritesHistory(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	other := f.hydrated(t, "elsewhere", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "elsewhere"))

	err := repo.Push(ctx(t), "dev", other, active)

	assert.ErrorIs(t, err, git.ErrNotFastForward)
	assert.Equal(t, active, f.remote.Branch(t, "dev"))
}

func TestMergeInTheCacheOnly(t *testing.T) {
	f := newFixture(t)
	active := f.hydrated(t, "dev", dry(1), "one")
	f.hydrated(t, "dev-next", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))

	res, err := repo.Merge("dev-next", "dev", git.MergeOptions{})

	require.NoError(t, err)
	assert.Equal(t, git.MergeCommit, res.Kind, "unrelated histories need a merge commit")
	assert.Equal(t, active, f.remote.Branch(t, "dev"), "Merge pushes nothing")
	info, err := repo.Commit(res.SHA)
	require.NoError(t, err)
	assert.Equal(t, []string{active, res.SourceSHA}, info.Parents)
	assert.Equal(t, git.DefaultIdentity.Name+" <"+git.DefaultIdentity.Email+">", info.Author)
}
