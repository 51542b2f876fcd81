package git_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

func TestCacheIsReusedAfterARestart(t *testing.T) {
	f := newFixture(t)
	dev := f.hydrated(t, "dev", dry(1), "one")
	first := f.open(t)
	require.NoError(t, first.Fetch(ctx(t), "dev"))
	uploads := f.srv.Uploads()

	// A new process: a new Cache on the same folder.
	restarted, err := f.newCache(t).Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)

	got, err := restarted.Resolve("dev")
	require.NoError(t, err, "what was fetched before the restart is still there")
	assert.Equal(t, dev, got)
	require.NoError(t, restarted.Fetch(ctx(t), "dev"))
	assert.Equal(t, uploads, f.srv.Uploads(), "nothing is downloaded again")
	assert.Empty(t, f.logs.String())
	entries, err := os.ReadDir(f.root)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "one folder per repository")
}

func TestCacheRecoversFromADamagedFolder(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, dir string){
		"garbage config": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), []byte("[core\x00garbage"), 0o600))
		},
		"lost packs": func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "objects")))
		},
		"not a repository": func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.MkdirAll(dir, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "junk"), []byte("x"), 0o600))
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			dev := f.hydrated(t, "dev", dry(1), "one")
			require.NoError(t, f.open(t).Fetch(ctx(t), "dev"))
			entries, err := os.ReadDir(f.root)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			damage(t, filepath.Join(f.root, entries[0].Name()))

			repo, err := f.newCache(t).Open(f.remote.URL(), git.Auth{}, git.Options{})
			require.NoError(t, err)
			require.NoError(t, repo.Fetch(ctx(t), "dev"))

			got, err := repo.Resolve("dev")
			require.NoError(t, err)
			assert.Equal(t, dev, got)
			assert.Contains(t, f.logs.String(), "damaged", "the recovery is logged")
			assert.Contains(t, f.logs.String(), "/app.git")
		})
	}
}

func TestCacheFoldersDoNotNameTheRepository(t *testing.T) {
	f := newFixture(t)
	_, err := f.cache.Open("https://git.example.com/secret-org/secret-repo.git", git.Auth{Token: "tok-123456"}, git.Options{})
	require.NoError(t, err)
	_, err = f.cache.Open("https://git.example.com/secret-org/other.git", git.Auth{}, git.Options{})
	require.NoError(t, err)

	entries, err := os.ReadDir(f.root)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "one folder per URL")
	for _, e := range entries {
		assert.NotContains(t, e.Name(), "secret")
		assert.NotContains(t, e.Name(), "example")
	}
}

func TestCacheIsSafeForConcurrentUse(t *testing.T) {
	f := newFixture(t)
	envs := []string{"dev", "staging", "prod"}
	var branches []string
	for i, env := range envs {
		branches = append(branches, env, env+"-next")
		base := f.hydrated(t, env, dry(i), env)
		f.remote.SetBranch(t, env+"-next", base)
		f.hydrated(t, env+"-next", dry(10+i), env+" next")
	}

	var wg sync.WaitGroup
	errs := make(chan error, 3*len(envs))
	for _, env := range envs {
		// One handle per strategy, as the promoter opens them, all on the same repository.
		repo, err := f.cache.Open(f.remote.URL(), git.Auth{}, git.Options{})
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if err := repo.Fetch(ctx(t), branches...); err != nil {
					errs <- err
					return
				}
			}
			expected, err := repo.Resolve(env)
			if err == nil {
				_, err = repo.MergeAndPush(ctx(t), env+"-next", env, expected, 3, git.MergeOptions{})
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, env := range envs {
		assert.Equal(t, f.remote.Branch(t, env+"-next"), f.remote.Branch(t, env), env)
	}
	f.remote.CheckConnectivity(t)
}

func TestNewCacheNeedsARoot(t *testing.T) {
	_, err := git.NewCache("", nil)
	assert.Error(t, err)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = git.NewCache(filepath.Join(file, "below"), nil)
	assert.True(t, err != nil && strings.Contains(err.Error(), "git cache"), "%v", err)
}

// The cache keeps decoded objects for all its repositories under one budget. A repository must
// still know only its own objects: a commit another repository read, and so cached, is not found
// in one that never fetched it.
func TestRepositoriesOfOneCacheSeeOnlyTheirOwnObjects(t *testing.T) {
	f := newFixture(t)
	other := f.srv.CreateRepo(t, "other")
	onlyInApp := f.hydrated(t, "dev", dry(1), "app's own")
	other.CommitFiles(t, "dev", map[string]string{"hydrator.metadata": string(git.HydratorNote(dry(2)))}, "other's own\n")

	all := func(string) bool { return true }
	app := f.open(t)
	require.NoError(t, app.Fetch(ctx(t), "dev"))
	_, err := app.Commit(onlyInApp)
	require.NoError(t, err)
	files, err := app.ReadFiles(onlyInApp, "manifests", all, 1<<20)
	require.NoError(t, err)
	require.Equal(t, "app's own", string(files["app.yaml"]))

	otherRepo, err := f.cache.Open(other.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	require.NoError(t, otherRepo.Fetch(ctx(t), "dev"))
	_, err = otherRepo.Commit(onlyInApp)
	assert.Error(t, err, "a commit of another repository, though cached, is not this one's")
	_, err = otherRepo.ReadFiles(onlyInApp, "manifests", all, 1<<20)
	assert.Error(t, err)
	_, err = otherRepo.DrySHA(onlyInApp)
	assert.Error(t, err)
}
