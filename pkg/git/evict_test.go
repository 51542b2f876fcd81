package git_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

// cacheFolder is the folder of the one repository in root that holds the config naming url.
func cacheFolder(t *testing.T, root, url string) string {
	t.Helper()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		cfg, err := os.ReadFile(filepath.Join(root, e.Name(), "config"))
		if err == nil && strings.Contains(string(cfg), url) {
			return filepath.Join(root, e.Name())
		}
	}
	t.Fatalf("no cache folder for %s", url)
	return ""
}

// The cache stays bounded: a repository not fetched for the eviction age is removed when a
// cache is made on the folder (a restart); one fetched since, or opened by this process, stays.
func TestCacheEvictsRepositoriesNotFetchedForLong(t *testing.T) {
	f := newFixture(t)
	f.remote.CommitFiles(t, "dev", map[string]string{"a": "1"}, "first")
	other := f.srv.CreateRepo(t, "other")
	other.CommitFiles(t, "dev", map[string]string{"b": "1"}, "first")
	ctx := context.Background()
	require.NoError(t, f.open(t).Fetch(ctx, "dev"))
	o, err := f.cache.Open(other.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	require.NoError(t, o.Fetch(ctx, "dev"))

	stale := cacheFolder(t, f.root, other.URL())
	fresh := cacheFolder(t, f.root, f.remote.URL())
	old := time.Now().Add(-8 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(stale, "sluice-last-fetch"), old, old))

	// This process opened both: nothing is evicted from under a handle.
	_, err = f.cache.Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	assert.DirExists(t, stale)

	restarted := f.newCache(t)
	assert.NoDirExists(t, stale, "not fetched for 8 days: evicted")
	assert.DirExists(t, fresh, "fetched just now: kept")
	assert.Contains(t, f.logs.String(), "removed a git cache repository")

	// Evicted means fetched again from nothing, and usable.
	o, err = restarted.Open(other.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	require.NoError(t, o.Fetch(ctx, "dev"))
	_, err = o.Resolve("dev")
	require.NoError(t, err)
}

// The eviction age is a setting.
func TestCacheEvictionAgeIsASetting(t *testing.T) {
	f := newFixture(t)
	f.remote.CommitFiles(t, "dev", map[string]string{"a": "1"}, "first")
	require.NoError(t, f.open(t).Fetch(context.Background(), "dev"))
	dir := cacheFolder(t, f.root, f.remote.URL())
	hourAgo := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "sluice-last-fetch"), hourAgo, hourAgo))
	f.newCache(t)
	assert.DirExists(t, dir, "an hour is young for the default")
	f.newCache(t, git.WithEvictAfter(30*time.Minute))
	assert.NoDirExists(t, dir, "older than the age set")
}
