package git_test

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
)

const repackedLog = "repacked a git cache repository"

// Many small fetches leave many packs; the fetch that goes over the limit repacks them into one,
// and every branch, note and commit reads as before, in this process and the next. Served both by
// gittest's go-git server and by git itself (http-backend), which build their packs and deltas
// differently.
func TestRepackAfterManyFetches(t *testing.T) {
	for name, serve := range remotes {
		t.Run(name, func(t *testing.T) {
			remote, url := serve(t)
			root, logs := t.TempDir(), &testenv.SyncBuffer{}
			c, err := git.NewCache(root, testLogger(logs), git.WithMaintenance(git.Maintenance{MaxPacks: 10}))
			require.NoError(t, err)
			repo, err := c.Open(url, git.Auth{}, git.Options{})
			require.NoError(t, err)
			// The same fetches, never repacked, for the size of their packs.
			plainRoot := t.TempDir()
			plainCache, err := git.NewCache(plainRoot, testLogger(logs), git.WithMaintenance(git.Maintenance{Disabled: true}))
			require.NoError(t, err)
			plain, err := plainCache.Open(url, git.Auth{}, git.Options{})
			require.NoError(t, err)

			var dev []string
			for i := range 11 {
				// Two revisions of a large manifest per fetch: the second is sent as a delta.
				var sha string
				for j := range 2 {
					sha = remote.CommitFiles(t, "dev", map[string]string{
						"hydrator.metadata":  string(git.HydratorNote(dry(i))),
						"manifests/app.yaml": manifest(2*i + j),
					}, fmt.Sprintf("hydrate %d\n", len(dev)))
					remote.AddNote(t, git.DefaultNotesRef, sha, string(git.HydratorNote(dry(100+len(dev)))))
					dev = append(dev, sha)
				}
				if i%3 == 0 {
					remote.CommitFiles(t, "staging", map[string]string{"manifests/app.yaml": fmt.Sprint(i)}, "staging\n")
				}
				require.NoError(t, repo.Fetch(ctx(t), "dev", "staging"))
				require.NoError(t, plain.Fetch(ctx(t), "dev", "staging"))
				if i < 10 {
					packs, _ := objectCounts(t, root)
					require.Equal(t, i+1, packs, "one pack per fetch, none repacked below the limit")
				}
				if i == 9 {
					require.NotContains(t, logs.String(), repackedLog)
				}
			}
			packs, loose := objectCounts(t, root)
			assert.Equal(t, 1, packs, "the 11 packs are one")
			assert.Equal(t, 0, loose)
			assert.Contains(t, logs.String(), repackedLog)
			assert.Contains(t, logs.String(), "packsBefore=11")
			assert.Contains(t, logs.String(), "packsAfter=1")
			assert.NotContains(t, logs.String(), "level=WARN")

			for _, r := range []*git.Repository{repo, reopen(t, root, url, logs)} {
				checkReads(t, r, remote, dev)
			}
			assert.NotContains(t, logs.String(), "damaged")
			verifyRepository(t, repoDir(t, root))
			plainPacks, _ := objectCounts(t, plainRoot)
			require.Equal(t, 11, plainPacks)
			assert.LessOrEqual(t, packBytes(t, root), packBytes(t, plainRoot), "packed objects are copied as they are, deltas included")
			if deltas, ok := countDeltas(t, repoDir(t, root)); ok {
				assert.GreaterOrEqual(t, deltas, 11, "the repacked pack keeps the deltas")
			}
		})
	}
}

// Merge commits the cache writes are loose objects; over the limit they go into a pack too. A
// commit Merge wrote and nobody pushed stays loose, and readable, until it is old.
func TestRepackPacksLooseMergeCommits(t *testing.T) {
	f := newFixture(t)
	f.cache = f.newCache(t, git.WithMaintenance(git.Maintenance{MaxLooseObjects: 7, MaxPacks: 1000}))
	repo := f.open(t)
	merges := promotions(t, f, repo, 6)
	_, loose := objectCounts(t, f.root)
	require.Equal(t, 6, loose, "one loose object per merge commit")

	f.hydrated(t, "dev-next", dry(50), "not promoted yet")
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	target, err := repo.Resolve("dev")
	require.NoError(t, err)
	young, err := repo.Merge("dev-next", "dev", git.MergeOptions{Message: "merged, not pushed yet\n"})
	require.NoError(t, err)
	old, err := repo.Merge("dev-next", "dev", git.MergeOptions{Message: "merged long ago, never pushed\n"})
	require.NoError(t, err)
	require.NotEqual(t, young.SHA, old.SHA)
	monthAgo := time.Now().Add(-30 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(looseObjectPath(t, f.root, old.SHA), monthAgo, monthAgo))
	_, loose = objectCounts(t, f.root)
	require.Equal(t, 8, loose)
	require.NotContains(t, f.logs.String(), repackedLog)

	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	assert.Contains(t, f.logs.String(), repackedLog)
	_, loose = objectCounts(t, f.root)
	assert.Equal(t, 1, loose, "only the young unpushed merge stays loose")
	for _, m := range merges {
		in, err := repo.IsAncestor(m, target)
		require.NoError(t, err)
		assert.True(t, in, "merge %s is still read through dev", m)
	}
	_, err = repo.Commit(old.SHA)
	assert.Error(t, err, "an old commit no ref reaches is dropped")
	_, err = repo.Commit(young.SHA)
	require.NoError(t, err, "a young one is kept")
	require.NoError(t, repo.Push(ctx(t), "dev", young.SHA, target), "and can still be pushed")
	assert.Equal(t, young.SHA, f.remote.Branch(t, "dev"))
	f.remote.CheckConnectivity(t)
	verifyRepository(t, repoDir(t, f.root))
}

// At the limits nothing is repacked; one pack more, and it is.
func TestNoRepackBelowTheLimits(t *testing.T) {
	f := newFixture(t)
	repo := f.open(t)
	promotions(t, f, repo, 4)
	packs, loose := objectCounts(t, f.root)
	require.Equal(t, 4, loose)
	require.GreaterOrEqual(t, packs, 4)
	before := listObjects(t, f.root)

	// Default limits, then limits equal to the counts: still not over.
	for _, c := range []*git.Cache{f.cache, f.newCache(t, git.WithMaintenance(git.Maintenance{MaxPacks: packs, MaxLooseObjects: loose}))} {
		r, err := c.Open(f.remote.URL(), git.Auth{}, git.Options{})
		require.NoError(t, err)
		require.NoError(t, r.Fetch(ctx(t), "dev", "dev-next"))
		assert.Equal(t, before, listObjects(t, f.root), "nothing packed, nothing removed")
	}
	disabled := f.newCache(t, git.WithMaintenance(git.Maintenance{Disabled: true, MaxPacks: 1, MaxLooseObjects: 1}))
	r, err := disabled.Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	require.NoError(t, r.Fetch(ctx(t), "dev", "dev-next"))
	assert.Equal(t, before, listObjects(t, f.root), "maintenance turned off")
	assert.NotContains(t, f.logs.String(), repackedLog)

	c := f.newCache(t, git.WithMaintenance(git.Maintenance{MaxPacks: packs, MaxLooseObjects: loose}))
	r, err = c.Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	f.hydrated(t, "dev-next", dry(60), "one more")
	require.NoError(t, r.Fetch(ctx(t), "dev", "dev-next"))
	assert.Contains(t, f.logs.String(), repackedLog, "one pack over the limit")
	packs, _ = objectCounts(t, f.root)
	assert.Equal(t, 1, packs)
}

// A branch the remote rewrote leaves commits no ref reaches; a repack drops them from the packs.
func TestRepackDropsWhatNoRefReaches(t *testing.T) {
	f := newFixture(t)
	f.cache = f.newCache(t, git.WithMaintenance(git.Maintenance{MaxPacks: 2}))
	repo := f.open(t)
	base := f.hydrated(t, "dev", dry(1), "base")
	rewritten := f.hydrated(t, "dev", dry(2), "rewritten away")
	require.NoError(t, repo.Fetch(ctx(t), "dev"))
	f.remote.SetBranch(t, "dev", base)
	kept := f.hydrated(t, "dev", dry(3), "kept")
	require.NoError(t, repo.Fetch(ctx(t), "dev"))
	_, err := repo.Commit(rewritten)
	require.NoError(t, err, "two packs: not repacked yet")

	f.hydrated(t, "staging", dry(4), "a third pack")
	require.NoError(t, repo.Fetch(ctx(t), "dev", "staging"))
	require.Contains(t, f.logs.String(), repackedLog)
	_, err = repo.Commit(rewritten)
	assert.Error(t, err)
	_, err = repo.Commit(kept)
	assert.NoError(t, err)
	verifyRepository(t, repoDir(t, f.root))
}

// A repack that fails at any step, before or after the new pack is in place, leaves a repository
// that reads whole, in this process and the next, and the next repack completes.
func TestRepackFailingAtAnyStepLeavesAReadableRepository(t *testing.T) {
	for _, step := range git.MaintenanceSteps {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t)
			repo := f.open(t)
			promotions(t, f, repo, 3)
			var calls []string
			failing := f.newCache(t,
				git.WithMaintenance(git.Maintenance{MaxPacks: 1, MaxLooseObjects: 1}),
				git.WithMaintenanceStep(func(s string) error {
					calls = append(calls, s)
					if s == step {
						return errors.New("injected failure")
					}
					return nil
				}))
			r, err := failing.Open(f.remote.URL(), git.Auth{}, git.Options{})
			require.NoError(t, err)
			require.NoError(t, r.Fetch(ctx(t), "dev", "dev-next"), "a failed repack does not fail the fetch")
			require.Equal(t, step, calls[len(calls)-1], "the repack reached the step: %v", calls)
			assert.Contains(t, f.logs.String(), "cannot repack")
			assert.Contains(t, f.logs.String(), "injected failure")
			checkPromotedHistory(t, r, f)

			calls = nil
			require.NoError(t, r.Fetch(ctx(t), "dev", "dev-next"))
			assert.Empty(t, calls, "no new attempt on the next fetch")

			checkAfterInterruption(t, f)
		})
	}
}

// Killed (SIGKILL) at any step of a repack, a process leaves a repository that the next process
// opens as it is (without fetching it again) and reads whole, and whose next repack completes.
func TestRepackKilledAtAnyStepLeavesAReadableRepository(t *testing.T) {
	for _, step := range git.MaintenanceSteps {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t)
			repo := f.open(t)
			promotions(t, f, repo, 3)

			cmd := exec.Command(os.Args[0], "-test.run=^TestRepackChildProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+strings.Join([]string{f.root, f.remote.URL(), step}, "\n"))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the child must be killed, not finish: %v\n%s", err, out)
			require.Equal(t, "signal: killed", exit.ProcessState.String(), "%s", out)

			checkAfterInterruption(t, f)
		})
	}
}

const childEnv = "SLUICE_GIT_REPACK_CHILD"

// TestRepackChildProcess is the process TestRepackKilledAtAnyStepLeavesAReadableRepository kills:
// it fetches into the cache and kills itself at the given step of the repack that follows.
func TestRepackChildProcess(t *testing.T) {
	args := strings.Split(os.Getenv(childEnv), "\n")
	if len(args) != 3 {
		t.Skip("run by TestRepackKilledAtAnyStepLeavesAReadableRepository")
	}
	root, url, step := args[0], args[1], args[2]
	c, err := git.NewCache(root, nil,
		git.WithMaintenance(git.Maintenance{MaxPacks: 1, MaxLooseObjects: 1}),
		git.WithMaintenanceStep(func(s string) error {
			if s == step {
				p, _ := os.FindProcess(os.Getpid())
				_ = p.Kill()
				time.Sleep(time.Minute)
			}
			return nil
		}))
	require.NoError(t, err)
	repo, err := c.Open(url, git.Auth{}, git.Options{})
	require.NoError(t, err)
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	t.Fatalf("step %s was never reached", step)
}

// checkAfterInterruption checks, as the next process, a repository whose repack was interrupted.
func checkAfterInterruption(t *testing.T, f *fixture) {
	t.Helper()
	next := f.newCache(t, git.WithMaintenance(git.Maintenance{MaxPacks: 1, MaxLooseObjects: 1}))
	r, err := next.Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	assert.NotContains(t, f.logs.String(), "damaged", "opened as it is, not fetched again")
	_, names := packFiles(t, f.root)
	for _, n := range names {
		assert.False(t, strings.HasPrefix(n, "tmp_"), "leftover %s", n)
		if idx, ok := strings.CutSuffix(n, ".idx"); ok {
			assert.Contains(t, names, idx+".pack", "an index without its pack")
		}
	}
	checkPromotedHistory(t, r, f)
	verifyRepository(t, repoDir(t, f.root))

	uploads := f.srv.Uploads()
	require.NoError(t, r.Fetch(ctx(t), "dev", "dev-next"))
	assert.Equal(t, uploads, f.srv.Uploads(), "nothing fetched again")
	packs, loose := objectCounts(t, f.root)
	assert.Equal(t, 1, packs, "the next repack completes")
	assert.Equal(t, 0, loose)
	checkPromotedHistory(t, r, f)
	verifyRepository(t, repoDir(t, f.root))
}

// promotions runs n promotions of dev-next into dev, each needing a merge commit, each fetched
// first: n packs (and one for the start) and n loose merge commits.
func promotions(t *testing.T, f *fixture, repo *git.Repository, n int) (merges []string) {
	t.Helper()
	base := f.hydrated(t, "dev", dry(0), "base")
	f.remote.SetBranch(t, "dev-next", base)
	f.remote.CommitFiles(t, "dev", map[string]string{"promoted-by": "an earlier promotion"}, "earlier promotion\n")
	for i := range n {
		next := f.hydrated(t, "dev-next", dry(10+i), strings.Repeat(fmt.Sprintf("revision %d\n", i), 100))
		f.remote.AddNote(t, git.DefaultNotesRef, next, string(git.HydratorNote(dry(10+i))))
		require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
		target, err := repo.Resolve("dev")
		require.NoError(t, err)
		res, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", target, 0, git.MergeOptions{})
		require.NoError(t, err)
		require.Equal(t, git.MergeCommit, res.Kind)
		merges = append(merges, res.SHA)
	}
	return merges
}

// checkPromotedHistory reads what promotions left through r: both branches as on the remote, the
// notes of dev-next's commits, every merge, and the ancestry between them.
func checkPromotedHistory(t *testing.T, r *git.Repository, f *fixture) {
	t.Helper()
	dev, err := r.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, f.remote.Branch(t, "dev"), dev)
	next, err := r.Resolve("dev-next")
	require.NoError(t, err)
	assert.Equal(t, f.remote.Branch(t, "dev-next"), next)
	log, err := r.Log("dev", 1000)
	require.NoError(t, err)
	notes := 0
	for _, c := range log {
		if len(c.Parents) == 2 {
			in, err := r.IsAncestor(c.Parents[1], dev)
			require.NoError(t, err)
			assert.True(t, in)
			d, err := r.DrySHA(c.Parents[1])
			require.NoError(t, err)
			if d.Source == git.DrySourceNote {
				notes++
			}
		}
	}
	assert.GreaterOrEqual(t, notes, 3, "the notes of the promoted commits read")
}

// checkReads reads the branches, the notes and the history of TestRepackAfterManyFetches.
func checkReads(t *testing.T, r *git.Repository, remote *gittest.Repo, dev []string) {
	t.Helper()
	for _, b := range []string{"dev", "staging"} {
		got, err := r.Resolve(b)
		require.NoError(t, err)
		assert.Equal(t, remote.Branch(t, b), got, b)
	}
	for i, sha := range dev {
		d, err := r.DrySHA(sha)
		require.NoError(t, err)
		assert.Equal(t, git.DrySourceNote, d.Source)
		assert.Equal(t, dry(100+i), d.SHA)
		c, err := r.Commit(sha)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("hydrate %d", i), c.Subject)
	}
	in, err := r.IsAncestor(dev[0], dev[len(dev)-1])
	require.NoError(t, err)
	assert.True(t, in)
	log, err := r.Log("dev", 100)
	require.NoError(t, err)
	assert.Len(t, log, len(dev))
}

// remotes serve a new empty repository and return it and its URL.
var remotes = map[string]func(t *testing.T) (*gittest.Repo, string){
	"go-git server": func(t *testing.T) (*gittest.Repo, string) {
		r := gittest.NewServer(t).CreateRepo(t, "app")
		return r, r.URL()
	},
	"git http-backend": func(t *testing.T) (*gittest.Repo, string) {
		dir := filepath.Join(t.TempDir(), "app.git")
		_, err := gogit.PlainInit(dir, true)
		require.NoError(t, err)
		url, stop, err := gittest.ServeWithGit(dir)
		if errors.Is(err, gittest.ErrNoGit) {
			t.Skip("git is not installed")
		}
		require.NoError(t, err)
		t.Cleanup(stop)
		return gittest.OpenBare(dir), url
	},
}

func testLogger(logs *testenv.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(logs, nil))
}

func reopen(t *testing.T, root, url string, logs *testenv.SyncBuffer) *git.Repository {
	t.Helper()
	c, err := git.NewCache(root, testLogger(logs))
	require.NoError(t, err)
	r, err := c.Open(url, git.Auth{}, git.Options{})
	require.NoError(t, err)
	return r
}

func repoDir(t *testing.T, root string) string {
	t.Helper()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	return filepath.Join(root, entries[0].Name())
}

// objectCounts counts the cached repository's packs and loose objects.
func objectCounts(t *testing.T, root string) (packs, loose int) {
	t.Helper()
	for _, name := range listObjects(t, root) {
		if strings.HasSuffix(name, ".pack") {
			packs++
		} else if !strings.HasPrefix(name, "pack/") {
			loose++
		}
	}
	return packs, loose
}

// listObjects lists the files under the cached repository's objects folder.
func listObjects(t *testing.T, root string) []string {
	t.Helper()
	objects := filepath.Join(repoDir(t, root), "objects")
	var names []string
	err := filepath.WalkDir(objects, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(objects, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	require.NoError(t, err)
	return names
}

func packBytes(t *testing.T, root string) int64 {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(repoDir(t, root), "objects", "pack", "pack-*.pack"))
	require.NoError(t, err)
	var n int64
	for _, p := range packs {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

// manifest is a large manifest that compresses poorly, revision rev of it differing from the
// others by one line: git and go-git send a revision as a delta on another in the same pack.
func manifest(rev int) string {
	var b strings.Builder
	for i := range 400 {
		if i == 200 {
			fmt.Fprintf(&b, "revision: %d\n", rev)
		}
		fmt.Fprintf(&b, "checksum-%d: %x\n", i, sha1.Sum([]byte(fmt.Sprint(i))))
	}
	return b.String()
}

// countDeltas counts the objects stored as deltas in the repository's packs, with git verify-pack;
// ok is false when git is not installed.
func countDeltas(t *testing.T, dir string) (n int, ok bool) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return 0, false
	}
	idx, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.idx"))
	require.NoError(t, err)
	for _, i := range idx {
		out, err := exec.Command(gitBin, "verify-pack", "-v", i).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, line := range strings.Split(string(out), "\n") {
			// Deltas are listed with two more fields: their depth and their base.
			if f := strings.Fields(line); len(f) == 7 && plumbing.IsHash(f[0]) {
				n++
			}
		}
	}
	return n, true
}

func looseObjectPath(t *testing.T, root, sha string) string {
	t.Helper()
	path := filepath.Join(repoDir(t, root), "objects", sha[:2], sha[2:])
	_, err := os.Stat(path)
	require.NoError(t, err, "%s is not a loose object", sha)
	return path
}

// verifyRepository reads every object a ref of the repository at dir reaches, in a storage of
// its own, and checks that its content hashes to its name; then git fsck checks the packs, when
// git is installed.
func verifyRepository(t *testing.T, dir string) {
	t.Helper()
	sto := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	defer sto.Close()
	refs, err := sto.IterReferences()
	require.NoError(t, err)
	var stack []plumbing.Hash
	require.NoError(t, refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			stack = append(stack, ref.Hash())
		}
		return nil
	}))
	require.NotEmpty(t, stack)
	seen := map[plumbing.Hash]bool{}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		obj, err := sto.EncodedObject(plumbing.AnyObject, h)
		require.NoError(t, err, "object %s", h)
		r, err := obj.Reader()
		require.NoError(t, err)
		hasher := plumbing.NewHasher(obj.Type(), obj.Size())
		_, err = io.Copy(hasher, r)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		require.Equal(t, h, hasher.Sum(), "content of %s", h)
		switch obj.Type() {
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(sto, obj)
			require.NoError(t, err)
			stack = append(append(stack, c.TreeHash), c.ParentHashes...)
		case plumbing.TreeObject:
			tree, err := object.DecodeTree(sto, obj)
			require.NoError(t, err)
			for _, e := range tree.Entries {
				if e.Mode != filemode.Submodule {
					stack = append(stack, e.Hash)
				}
			}
		}
	}

	gitBin, err := exec.LookPath("git")
	if err != nil {
		return
	}
	cmd := exec.Command(gitBin, "--git-dir", dir, "fsck", "--full", "--strict", "--no-dangling", "--no-progress")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git fsck:\n%s", out)
}
