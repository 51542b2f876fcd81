package git_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
)

// fixture is a served repository and a cache reading it.
type fixture struct {
	srv    *gittest.Server
	remote *gittest.Repo
	cache  *git.Cache
	root   string
	logs   *testenv.SyncBuffer
	repo   *git.Repository
}

func newFixture(t *testing.T, opts ...gittest.Option) *fixture {
	t.Helper()
	srv := gittest.NewServer(t, opts...)
	f := &fixture{srv: srv, remote: srv.CreateRepo(t, "app"), root: t.TempDir(), logs: &testenv.SyncBuffer{}}
	f.cache = f.newCache(t)
	return f
}

func (f *fixture) newCache(t *testing.T, opts ...git.CacheOption) *git.Cache {
	t.Helper()
	c, err := git.NewCache(f.root, slog.New(slog.NewTextHandler(f.logs, nil)), opts...)
	require.NoError(t, err)
	return c
}

// open returns a handle on the fixture's repository over HTTP, without credentials.
func (f *fixture) open(t *testing.T) *git.Repository {
	t.Helper()
	r, err := f.cache.Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	f.repo = r
	return r
}

// hydrated writes a hydrated commit on branch whose metadata file names dry.
func (f *fixture) hydrated(t *testing.T, branch, dry, manifest string) string {
	t.Helper()
	return f.remote.CommitFiles(t, branch, map[string]string{
		"hydrator.metadata":  string(git.HydratorNote(dry)),
		"manifests/app.yaml": manifest,
	}, "hydrate "+dry[:7]+"\n")
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// dry returns a made-up dry commit SHA.
func dry(i int) string { return gittest.FakeDrySHA(1000 + i) }
