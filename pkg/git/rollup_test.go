package git_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
)

// A repository whose history came in one large pack: a repack rolls the later, smaller packs
// into one and leaves the large pack as it is, so its memory follows what was fetched since, not
// the history, and every object still reads, in this process and the next.
func TestRepackRollsUpSmallPacksAndKeepsTheLargeOne(t *testing.T) {
	for name, serve := range remotes {
		t.Run(name, func(t *testing.T) {
			remote, url := serve(t)
			root, logs := t.TempDir(), &testenv.SyncBuffer{}
			c, err := git.NewCache(root, testLogger(logs), git.WithMaintenance(git.Maintenance{MaxPacks: 5, LargePackObjects: 20}))
			require.NoError(t, err)
			repo, err := c.Open(url, git.Auth{}, git.Options{})
			require.NoError(t, err)

			h := &history{remote: remote}
			h.start(t)
			require.NoError(t, repo.Fetch(ctx(t), "dev", "staging"))
			first, err := git.PackedTypes(repoDir(t, root))
			require.NoError(t, err)
			require.Len(t, first, 1)
			large := slices.Collect(maps.Keys(first))[0]

			for i := range 5 {
				h.hydrate(t)
				require.NoError(t, repo.Fetch(ctx(t), "dev", "staging"))
				if i < 4 {
					require.NotContains(t, logs.String(), repackedLog, "6 packs are over the limit of 5; %d are not", i+2)
				}
			}
			require.Contains(t, logs.String(), repackedLog)
			assert.Contains(t, logs.String(), "packsBefore=6")
			assert.Contains(t, logs.String(), "packsAfter=2")
			assert.Contains(t, logs.String(), "packsKept=1")
			assert.NotContains(t, logs.String(), "level=WARN")

			after, err := git.PackedTypes(repoDir(t, root))
			require.NoError(t, err)
			require.Len(t, after, 2)
			assert.Equal(t, first[large], after[large], "the large pack is left as it is")
			for name, types := range after {
				if name != large {
					t.Logf("rolled-up pack: %v (REF_DELTA %d, OFS_DELTA %d)", types, types[plumbing.REFDeltaObject], types[plumbing.OFSDeltaObject])
				}
			}
			_, loose := objectCounts(t, root)
			assert.Zero(t, loose)
			for _, r := range []*git.Repository{repo, reopen(t, root, url, logs)} {
				checkReads(t, r, remote, h.dev)
			}
			verifyRepository(t, repoDir(t, root))
		})
	}
}

// A roll-up that fails at any step leaves the large pack as it was and a repository that reads
// whole; the next process's roll-up completes.
func TestRollUpFailingAtAnyStepLeavesTheLargePackAndAReadableRepository(t *testing.T) {
	m := git.Maintenance{MaxPacks: 3, LargePackObjects: 20}
	for _, step := range git.MaintenanceSteps {
		t.Run(step, func(t *testing.T) {
			remote, url := remotes["go-git server"](t)
			root, logs := t.TempDir(), &testenv.SyncBuffer{}
			h := &history{remote: remote}
			open := func(opts ...git.CacheOption) *git.Repository {
				c, err := git.NewCache(root, testLogger(logs), opts...)
				require.NoError(t, err)
				r, err := c.Open(url, git.Auth{}, git.Options{})
				require.NoError(t, err)
				return r
			}
			h.start(t)
			failing := open(git.WithMaintenance(m), git.WithMaintenanceStep(func(s string) error {
				if s == step {
					return errors.New("injected failure")
				}
				return nil
			}))
			require.NoError(t, failing.Fetch(ctx(t), "dev", "staging"))
			first, err := git.PackedTypes(repoDir(t, root))
			require.NoError(t, err)
			large := slices.Collect(maps.Keys(first))[0]
			// A loose object, as a merge commit the cache wrote: rolled up too.
			sto := filesystem.NewStorage(osfs.New(repoDir(t, root)), cache.NewObjectLRUDefault())
			blob := sto.NewEncodedObject()
			blob.SetType(plumbing.BlobObject)
			w, err := blob.Writer()
			require.NoError(t, err)
			_, err = w.Write([]byte("written by the cache\n"))
			require.NoError(t, err)
			require.NoError(t, w.Close())
			_, err = sto.SetEncodedObject(blob)
			require.NoError(t, err)
			require.NoError(t, sto.Close())
			for range 3 {
				h.hydrate(t)
				require.NoError(t, failing.Fetch(ctx(t), "dev", "staging"))
			}
			require.Contains(t, logs.String(), "injected failure")
			checkReads(t, failing, remote, h.dev)

			next := open(git.WithMaintenance(m))
			checkReads(t, next, remote, h.dev)
			repacks := strings.Count(logs.String(), repackedLog)
			for range 3 {
				// Fetched until over the limit again (a roll-up that failed after its new pack
				// was in place left fewer packs).
				h.hydrate(t)
				require.NoError(t, next.Fetch(ctx(t), "dev", "staging"))
				if strings.Count(logs.String(), repackedLog) > repacks {
					break
				}
			}
			require.Greater(t, strings.Count(logs.String(), repackedLog), repacks, "the next roll-up completes")
			after, err := git.PackedTypes(repoDir(t, root))
			require.NoError(t, err)
			assert.Len(t, after, 2, "the large pack and one rolled up")
			assert.Equal(t, first[large], after[large], "the large pack is left as it is")
			checkReads(t, next, remote, h.dev)
			_, loose := objectCounts(t, root)
			assert.Zero(t, loose)
			verifyRepository(t, repoDir(t, root))
		})
	}
}

// history is a remote's dev branch of hydrated commits, each with its note, as checkReads reads
// them.
type history struct {
	remote *gittest.Repo
	dev    []string
}

// start hydrates 20 commits on dev and one on staging: the first fetch's large pack.
func (h *history) start(t *testing.T) {
	for range 20 {
		h.hydrate(t)
	}
	h.remote.CommitFiles(t, "staging", map[string]string{"manifests/app.yaml": "staging"}, "staging\n")
}

// hydrate adds one hydrated commit on dev.
func (h *history) hydrate(t *testing.T) {
	i := len(h.dev)
	sha := h.remote.CommitFiles(t, "dev", map[string]string{
		"hydrator.metadata":  string(git.HydratorNote(dry(i))),
		"manifests/app.yaml": manifest(i),
	}, fmt.Sprintf("hydrate %d\n", i))
	h.remote.AddNote(t, git.DefaultNotesRef, sha, string(git.HydratorNote(dry(100+i))))
	h.dev = append(h.dev, sha)
}
