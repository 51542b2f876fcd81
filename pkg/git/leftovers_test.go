package git_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

// packFiles lists the cached repository's objects/pack folder.
func packFiles(t *testing.T, root string) (dir string, names []string) {
	t.Helper()
	repos, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, repos, 1)
	dir = filepath.Join(root, repos[0].Name(), "objects", "pack")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return dir, names
}

// A process killed during a fetch leaves a partial pack in a temporary file, and one killed while
// saving the pack leaves its index without the pack: the next process removes both, so the same
// pack fetched again gets a whole index.
func TestCacheRemovesWhatAKilledFetchLeft(t *testing.T) {
	f := newFixture(t)
	dev := f.hydrated(t, "dev", dry(1), strings.Repeat("manifest line\n", 500))
	require.NoError(t, f.open(t).Fetch(ctx(t), "dev"))
	dir, names := packFiles(t, f.root)
	require.Len(t, names, 2, "one pack and its index: %v", names)
	var pack, idx string
	for _, n := range names {
		if strings.HasSuffix(n, ".pack") {
			pack = filepath.Join(dir, n)
		} else {
			idx = filepath.Join(dir, n)
		}
	}
	// The kill came while the index was written: half an index, no pack yet, no ref updated.
	whole, err := os.ReadFile(idx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(idx, whole[:len(whole)/2], 0o600))
	require.NoError(t, os.Remove(pack))
	require.NoError(t, os.RemoveAll(filepath.Join(filepath.Dir(filepath.Dir(dir)), "refs", "remotes")))
	// Earlier kills, during downloads and a loose object write.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tmp_pack_123"), []byte("PACK partial"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tmp_obj_456"), []byte("partial"), 0o600))

	restarted, err := f.newCache(t).Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	_, names = packFiles(t, f.root)
	assert.Empty(t, names, "the leftovers are gone")
	require.NoError(t, restarted.Fetch(ctx(t), "dev"), "the same pack, fetched again")
	got, err := restarted.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, dev, got)
	// Yet another process reads the pack through the index on disk.
	again, err := f.newCache(t).Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	_, err = again.Commit(dev)
	assert.NoError(t, err, "read through a whole index, not the half one")
	assert.Empty(t, f.logs.String(), "never taken for a damaged folder, to be fetched whole again")
}

// A download cut short keeps nothing of the partial pack, and the next fetch completes.
func TestFailedDownloadLeavesNoPartialPack(t *testing.T) {
	f := newFixture(t)
	f.hydrated(t, "dev", dry(1), "one")
	require.NoError(t, f.open(t).Fetch(ctx(t), "dev"))
	dev := f.hydrated(t, "dev", dry(2), strings.Repeat("a larger manifest line\n", 2000))

	// A proxy that drops the upload-pack reply after its first bytes, as a broken connection does.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			f.srv.ServeHTTP(&cutWriter{ResponseWriter: w, left: 64}, r)
			return
		}
		f.srv.ServeHTTP(w, r)
	}))
	t.Cleanup(cut.Close)
	url := cut.URL + "/app.git"
	broken, err := f.newCache(t).Open(url, git.Auth{}, git.Options{})
	require.NoError(t, err)
	require.Error(t, broken.Fetch(ctx(t), "dev"))

	entries, err := os.ReadDir(f.root)
	require.NoError(t, err)
	for _, e := range entries {
		packs, err := filepath.Glob(filepath.Join(f.root, e.Name(), "objects", "pack", "tmp_*"))
		require.NoError(t, err)
		assert.Empty(t, packs, "no partial pack kept")
	}
	require.NoError(t, f.repo.Fetch(ctx(t), "dev"))
	got, err := f.repo.Resolve("dev")
	require.NoError(t, err)
	assert.Equal(t, dev, got)
}

// cutWriter passes the first left bytes of a reply and drops the rest.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (w *cutWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.left)
	w.left -= n
	if n > 0 {
		if _, err := w.ResponseWriter.Write(p[:n]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
