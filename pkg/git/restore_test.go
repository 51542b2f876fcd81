package git_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

// envHistory is prod after three promotions: dry(1) and dry(2) fast-forwarded, dry(3) merged
// by an SCM as a merge commit without a note of its own.
type envHistory struct {
	good, better, bad string // prod's commits deploying dry(1), dry(2), dry(3)
}

func promotedThrice(t *testing.T, f *fixture) envHistory {
	t.Helper()
	var h envHistory
	h.good = f.hydrated(t, "prod", dry(1), "replicas: 1\nimage: web:1\n")
	f.remote.AddNote(t, git.DefaultNotesRef, h.good, `{"drySha":"`+dry(1)+`","subject":"web 1","author":"Dev <dev@example.com>"}`)
	h.better = f.hydrated(t, "prod", dry(2), "replicas: 2\nimage: web:2\n")
	f.remote.SetBranch(t, "prod-next", h.better)
	proposed := f.remote.CommitFiles(t, "prod-next", map[string]string{
		"hydrator.metadata": string(git.HydratorNote(dry(3))), "manifests/app.yaml": "replicas: 2\nimage: web:3\n", "manifests/cm.yaml": "new",
	}, "hydrate dry 3\n")
	f.remote.AddNote(t, git.DefaultNotesRef, proposed, string(git.HydratorNote(dry(3))))
	h.bad = f.remote.MergeCommit(t, "prod", f.remote.ReadCommit(t, proposed).TreeHash.String(), h.better, proposed)
	return h
}

// fetchEnv fetches branches and the revert branch, which may not exist yet.
func fetchEnv(t *testing.T, repo *git.Repository, branches ...string) {
	t.Helper()
	err := repo.Fetch(ctx(t), append(branches, "prod-revert-web")...)
	var missing *git.BranchNotFoundError
	if errors.As(err, &missing) && len(missing.Branches) == 1 && missing.Branches[0] == "prod-revert-web" {
		return
	}
	require.NoError(t, err)
}

func revertRequest(restore string, when time.Time) git.RestoreRequest {
	return git.RestoreRequest{
		Branch: "prod", Restore: restore, RevertBranch: "prod-revert-web",
		Message: "Revert prod to dry 1\n\nSluice-Reverted-Dry-SHA: " + dry(3) + "\nSluice-Revert-Commit-Uid: 1234\n",
		Marker:  "Sluice-Revert-Commit-Uid: 1234",
		Note:    git.HydratorNote(dry(1)),
		When:    when,
	}
}

func TestFindDeployedWalksTheFirstParentHistory(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "prod", "prod-next"))

	for want, d := range map[string]string{h.good: dry(1), h.better: dry(2), h.bad: dry(3)} {
		got, err := repo.FindDeployed("prod", d, 100)
		require.NoError(t, err)
		assert.Equal(t, want, got, "dry %s", d[:7])
	}
	deployed, err := repo.DeployedDrySHA(h.bad)
	require.NoError(t, err)
	assert.Equal(t, dry(3), deployed.SHA, "a merge commit deploys the commit it merged")

	_, err = repo.FindDeployed("prod", dry(9), 100)
	assert.ErrorIs(t, err, git.ErrNotDeployed, "never deployed")
	_, err = repo.FindDeployed("prod", dry(1), 2)
	assert.ErrorIs(t, err, git.ErrNotDeployed, "beyond the limit")
}

func TestRestoreWritesOneCommitWithTheOldTree(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	repo := f.open(t)
	fetchEnv(t, repo, "prod")
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	old, err := repo.DrySHA(h.good)
	require.NoError(t, err)
	req := revertRequest(h.good, when)
	req.Note = git.HydratorNoteFor(old)

	res, err := repo.Restore(ctx(t), req)

	require.NoError(t, err)
	assert.False(t, res.Existing)
	assert.Equal(t, h.bad, res.Parent)
	assert.Equal(t, res.SHA, f.remote.Branch(t, "prod-revert-web"))
	assert.Equal(t, h.bad, f.remote.Branch(t, "prod"), "the environment moves only when the pull request merges")
	c := f.remote.ReadCommit(t, res.SHA)
	assert.Equal(t, f.remote.ReadCommit(t, h.good).TreeHash, c.TreeHash, "the whole old state: files added since are gone too")
	require.Len(t, c.ParentHashes, 1)
	assert.Equal(t, h.bad, c.ParentHashes[0].String())
	assert.True(t, c.Committer.When.Equal(when))
	assert.Equal(t, dry(3), git.Trailer(c.Message, "Sluice-Reverted-Dry-SHA"))

	require.NoError(t, repo.Fetch(ctx(t), "prod-revert-web"))
	got, err := repo.DrySHA(res.SHA)
	require.NoError(t, err)
	assert.Equal(t, git.DryCommit{SHA: dry(1), Source: git.DrySourceNote, Subject: "web 1", Author: "Dev <dev@example.com>"}, got,
		"the note names the target and keeps what the hydrator said about it")
	f.remote.CheckConnectivity(t)
}

func TestRestoreRepeatedFindsItsCommit(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	repo := f.open(t)
	fetchEnv(t, repo, "prod")
	first, err := repo.Restore(ctx(t), revertRequest(h.good, time.Now()))
	require.NoError(t, err)
	notes := f.remote.Ref(t, git.DefaultNotesRef)

	// A restart: a new cache, a later clock, and the environment moved on meanwhile.
	f.hydrated(t, "prod", dry(4), "replicas: 4\n")
	f.cache = f.newCache(t)
	again := f.open(t)
	var missing *git.BranchNotFoundError
	err = again.Fetch(ctx(t), "prod", "prod-revert-web")
	require.False(t, errors.As(err, &missing), "%v", err)
	second, err := again.Restore(ctx(t), revertRequest(h.good, time.Now().Add(time.Hour)))

	require.NoError(t, err)
	assert.True(t, second.Existing)
	assert.Equal(t, first.SHA, second.SHA, "one revert commit, never two")
	assert.Equal(t, first.SHA, f.remote.Branch(t, "prod-revert-web"))
	assert.Equal(t, notes, f.remote.Ref(t, git.DefaultNotesRef), "the note was there: nothing written")
}

func TestRestoreAfterACrashBetweenNoteAndBranchWritesTheSameCommit(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	repo := f.open(t)
	fetchEnv(t, repo, "prod")
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	first, err := repo.Restore(ctx(t), revertRequest(h.good, when))
	require.NoError(t, err)
	// As if the process died after pushing the note and before pushing the branch.
	f.remote.DeleteBranch(t, "prod-revert-web")
	notes := f.remote.Ref(t, git.DefaultNotesRef)

	f.cache = f.newCache(t)
	again := f.open(t)
	err = again.Fetch(ctx(t), "prod", "prod-revert-web")
	require.ErrorIs(t, err, git.ErrBranchNotFound)
	second, err := again.Restore(ctx(t), revertRequest(h.good, when))

	require.NoError(t, err)
	assert.False(t, second.Existing)
	assert.Equal(t, first.SHA, second.SHA, "the same inputs write the same commit")
	assert.Equal(t, notes, f.remote.Ref(t, git.DefaultNotesRef), "its note is found, not written again")
}

func TestRestoreWinsANotesRaceWithTheHydrator(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	repo := f.open(t)
	fetchEnv(t, repo, "prod")
	// The hydrator notes a new commit after our fetch.
	next := f.hydrated(t, "staging-next", dry(5), "five")
	f.remote.AddNote(t, git.DefaultNotesRef, next, string(git.HydratorNote(dry(5))))

	res, err := repo.Restore(ctx(t), revertRequest(h.good, time.Now()))

	require.NoError(t, err)
	require.NoError(t, repo.Fetch(ctx(t), "prod-revert-web", "staging-next"))
	for sha, want := range map[string]string{res.SHA: dry(1), next: dry(5)} {
		d, err := repo.DrySHA(sha)
		require.NoError(t, err)
		assert.Equal(t, want, d.SHA, "both notes are kept")
		assert.Equal(t, git.DrySourceNote, d.Source)
	}
}

func TestRestoreRefusesARevertBranchHoldingSomethingElse(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	f.remote.SetBranch(t, "prod-revert-web", h.good)
	stray := f.remote.CommitFiles(t, "prod-revert-web", map[string]string{"x": "y"}, "someone's work\n")
	repo := f.open(t)
	fetchEnv(t, repo, "prod")

	_, err := repo.Restore(ctx(t), revertRequest(h.good, time.Now()))

	assert.ErrorIs(t, err, git.ErrRevertBranchTaken)
	assert.Equal(t, stray, f.remote.Branch(t, "prod-revert-web"), "nothing is dropped")
}

func TestRestoreMovesARevertBranchAlreadyMerged(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	f.remote.SetBranch(t, "prod-revert-web", h.better)
	repo := f.open(t)
	fetchEnv(t, repo, "prod")

	res, err := repo.Restore(ctx(t), revertRequest(h.good, time.Now()))

	require.NoError(t, err)
	assert.Equal(t, res.SHA, f.remote.Branch(t, "prod-revert-web"))
}

func TestRestoreRefusesACommitOutsideTheHistory(t *testing.T) {
	f := newFixture(t)
	promotedThrice(t, f)
	elsewhere := f.hydrated(t, "staging", dry(1), "other")
	repo := f.open(t)
	fetchEnv(t, repo, "prod", "staging")

	_, err := repo.Restore(ctx(t), revertRequest(elsewhere, time.Now()))

	assert.ErrorIs(t, err, git.ErrNotOnBranch)
	assert.Empty(t, f.remote.Branch(t, "prod-revert-web"))
}

func TestTrailer(t *testing.T) {
	msg := "Revert\n\nbody: not a trailer\n\nSluice-Reverted-Dry-SHA: abc\nsluice-revert-commit: default/x\n"
	assert.Equal(t, "abc", git.Trailer(msg, "Sluice-Reverted-Dry-SHA"))
	assert.Equal(t, "default/x", git.Trailer(msg, "Sluice-Revert-Commit"))
	assert.Empty(t, git.Trailer(msg, "Missing"))
}

// With Onto, a revert whose environment branch moved under its unmerged commit writes a new one
// on the new tip and replaces its own old one on the revert branch (compare-and-swap, not
// fast-forward); a branch fetched elsewhere than Onto is refused as stale.
func TestRestoreOntoANewTipReplacesItsOwnStaleCommit(t *testing.T) {
	f := newFixture(t)
	h := promotedThrice(t, f)
	repo := f.open(t)
	fetchEnv(t, repo, "prod")
	req := revertRequest(h.good, time.Now())
	req.Onto = h.bad
	first, err := repo.Restore(ctx(t), req)
	require.NoError(t, err)

	moved := f.hydrated(t, "prod", dry(3), "replicas: 3, re-hydrated\n")
	stale := req
	stale.Onto = moved
	_, err = repo.Restore(ctx(t), stale)
	require.ErrorIs(t, err, git.ErrStale, "the cache still has prod at the old tip")

	fetchEnv(t, repo, "prod", "prod-revert-web")
	second, err := repo.Restore(ctx(t), stale)
	require.NoError(t, err)
	assert.False(t, second.Existing)
	assert.Equal(t, moved, second.Parent)
	assert.NotEqual(t, first.SHA, second.SHA)
	assert.Equal(t, second.SHA, f.remote.Branch(t, "prod-revert-web"), "the revert branch holds the new commit")
	assert.Equal(t, f.remote.ReadCommit(t, h.good).TreeHash, f.remote.ReadCommit(t, second.SHA).TreeHash)

	again, err := repo.Restore(ctx(t), stale)
	require.NoError(t, err)
	assert.True(t, again.Existing, "repeated on the same tip: found, not written twice")
	assert.Equal(t, second.SHA, again.SHA)
}
