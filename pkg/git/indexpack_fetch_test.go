package git_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

// A pack over the large-pack line is indexed from disk; the cache then reads, merges and pushes
// as after any fetch, and later fetches (large or not) add to it.
func TestAFetchOfALargePackIsIndexedFromDisk(t *testing.T) {
	f := newFixture(t)
	f.cache = f.newCache(t, git.WithLargePackObjects(10))
	active := f.hydrated(t, "dev", dry(1), "one")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev"))
	require.Len(t, packIndexes(t, f.root), 1, "the first fetch is small")

	f.remote.SetBranch(t, "dev-next", active)
	for i := 2; i < 6; i++ {
		f.hydrated(t, "dev-next", dry(i), strings.Repeat("replicas: 2\n", i))
	}
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	assert.Len(t, packIndexes(t, f.root), 2, "the large pack and its index, in place")
	drySHA, err := repo.DrySHA(f.remote.Branch(t, "dev-next"))
	require.NoError(t, err)
	assert.Equal(t, dry(5), drySHA.SHA)
	files, err := repo.ReadFiles(f.remote.Branch(t, "dev-next"), "manifests", func(string) bool { return true }, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("replicas: 2\n", 5), string(files["app.yaml"]))

	// A small fetch after the large one goes through go-git, into the storage the large one
	// reopened.
	proposed := f.hydrated(t, "dev-next", dry(6), "six")
	require.NoError(t, repo.Fetch(ctx(t), "dev", "dev-next"))
	assert.Len(t, packIndexes(t, f.root), 3, "go-git stored the small pack beside the others")
	res, err := repo.MergeAndPush(ctx(t), "dev-next", "dev", active, 0, git.MergeOptions{})
	require.NoError(t, err)
	assert.Equal(t, proposed, res.SHA)
	assert.Equal(t, proposed, f.remote.Branch(t, "dev"))
	f.remote.CheckConnectivity(t)

	leftovers, err := filepath.Glob(filepath.Join(f.root, "*", "objects", "pack", "tmp_*"))
	require.NoError(t, err)
	assert.Empty(t, leftovers)
}

func packIndexes(t *testing.T, root string) []string {
	t.Helper()
	idx, err := filepath.Glob(filepath.Join(root, "*", "objects", "pack", "pack-*.idx"))
	require.NoError(t, err)
	return idx
}
