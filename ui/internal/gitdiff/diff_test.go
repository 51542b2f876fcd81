package gitdiff

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git/gittest"
)

// served is a repository on a real git HTTP server, and a fetch of its branch env/dev.
func served(t *testing.T) (*gittest.Server, *gittest.Repo) {
	t.Helper()
	srv := gittest.NewServer(t)
	return srv, srv.CreateRepo(t, "deploy")
}

func fetchDev(t *testing.T, repo *gittest.Repo, lim Limits) *Repo {
	t.Helper()
	r, err := Fetch(context.Background(), Source{URL: repo.URL()}, []string{"env/dev", "env/dev-next"}, lim)
	require.NoError(t, err)
	return r
}

func TestDiffShowsTheChangedLinesOfEachFile(t *testing.T) {
	_, repo := served(t)
	from := repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "replicas: 1\nimage: web:1\n", "db.yaml": "kind: db\n"}, "first")
	repo.SetBranch(t, "env/dev-next", from)
	to := repo.CommitFiles(t, "env/dev-next", map[string]string{"web.yaml": "replicas: 1\nimage: web:2\n", "cache.yaml": "kind: cache\n"}, "second")
	res, err := fetchDev(t, repo, Limits{}).Diff(context.Background(), from, to, Limits{})
	require.NoError(t, err)
	require.Len(t, res.Files, 2, "cache.yaml added, web.yaml changed; db.yaml is on env/dev-next too, unchanged")
	assert.Equal(t, "cache.yaml", res.Files[0].Name)
	assert.Equal(t, "added", res.Files[0].Status)
	web := res.Files[1]
	assert.Equal(t, "modified", web.Status)
	assert.Contains(t, web.Lines, Line{Kind: "del", Text: "-image: web:1"})
	assert.Contains(t, web.Lines, Line{Kind: "add", Text: "+image: web:2"})
	assert.Contains(t, web.Lines, Line{Kind: "context", Text: " replicas: 1"})
	assert.Equal(t, "hunk", web.Lines[0].Kind)
	assert.Zero(t, res.Omitted)
}

func TestDiffWithoutFromIsTheChangeOfTheCommitOnItsBranch(t *testing.T) {
	_, repo := served(t)
	repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "image: web:1\n"}, "first")
	to := repo.CommitFiles(t, "env/dev", map[string]string{"web.yaml": "image: web:2\n"}, "second")
	res, err := fetchDev(t, repo, Limits{}).Diff(context.Background(), "", to, Limits{})
	require.NoError(t, err)
	require.Len(t, res.Files, 1)
	assert.Contains(t, res.Files[0].Lines, Line{Kind: "del", Text: "-image: web:1"})
}

func TestDiffShowsAtMostLimitFilesAndSaysHowManyItLeftOut(t *testing.T) {
	_, repo := served(t)
	from := repo.CommitFiles(t, "env/dev", map[string]string{"a.yaml": "a\n"}, "first")
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf("f%d.yaml", i)] = "x\n"
	}
	to := repo.CommitFiles(t, "env/dev", files, "five files")
	res, err := fetchDev(t, repo, Limits{}).Diff(context.Background(), from, to, Limits{Files: 3})
	require.NoError(t, err)
	assert.Len(t, res.Files, 3)
	assert.Equal(t, 2, res.Omitted)
	assert.Equal(t, "more than 3 files changed", res.TooLarge)
}

func TestDiffStopsAtPatchBytes(t *testing.T) {
	_, repo := served(t)
	from := repo.CommitFiles(t, "env/dev", map[string]string{"a.yaml": "a\n"}, "first")
	to := repo.CommitFiles(t, "env/dev", map[string]string{"a.yaml": "b\n", "big.yaml": strings.Repeat("line of text\n", 200)}, "big")
	res, err := fetchDev(t, repo, Limits{}).Diff(context.Background(), from, to, Limits{PatchBytes: 1024})
	require.NoError(t, err)
	require.Len(t, res.Files, 1, "a.yaml fits, big.yaml's 2.6 KiB of diff does not")
	assert.Equal(t, "a.yaml", res.Files[0].Name)
	assert.Equal(t, 1, res.Omitted)
	assert.Equal(t, "the diff is over 1 KiB", res.TooLarge)
}

func TestDiffDoesNotDiffAFileOverFileBytes(t *testing.T) {
	_, repo := served(t)
	from := repo.CommitFiles(t, "env/dev", map[string]string{"big.yaml": strings.Repeat("a\n", 600)}, "first")
	to := repo.CommitFiles(t, "env/dev", map[string]string{"big.yaml": strings.Repeat("b\n", 600)}, "second")
	res, err := fetchDev(t, repo, Limits{}).Diff(context.Background(), from, to, Limits{FileBytes: 1000})
	require.NoError(t, err)
	require.Len(t, res.Files, 1)
	assert.True(t, res.Files[0].TooLarge)
	assert.Empty(t, res.Files[0].Lines)
}

func TestFetchRefusesBranchesOverFetchBytes(t *testing.T) {
	_, repo := served(t)
	repo.CommitFiles(t, "env/dev", map[string]string{"big.yaml": strings.Repeat("0123456789abcdef", 8<<10)}, "128 KiB")
	_, err := Fetch(context.Background(), Source{URL: repo.URL()}, []string{"env/dev"}, Limits{FetchBytes: 64 << 10})
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "compare the commits on the SCM or with git")
	_, err = Fetch(context.Background(), Source{URL: repo.URL()}, []string{"env/dev"}, Limits{FetchBytes: 1 << 20})
	assert.NoError(t, err, "within the bound")
}

func TestFetchStopsAtTheDeadline(t *testing.T) {
	_, repo := served(t)
	repo.CommitFiles(t, "env/dev", map[string]string{"a.yaml": "a\n"}, "first")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Fetch(ctx, Source{URL: repo.URL()}, []string{"env/dev"}, Limits{})
	require.ErrorIs(t, err, context.Canceled)
}

func TestACommitNotOnTheBranchesReadIsUnknown(t *testing.T) {
	_, repo := served(t)
	repo.CommitFiles(t, "env/dev", map[string]string{"a.yaml": "a\n"}, "first")
	other := repo.CommitFiles(t, "elsewhere", map[string]string{"a.yaml": "b\n"}, "other")
	_, err := fetchDev(t, repo, Limits{}).Diff(context.Background(), "", other, Limits{})
	require.ErrorIs(t, err, ErrUnknownCommit)
	_, err = fetchDev(t, repo, Limits{}).Diff(context.Background(), "", "not-a-sha", Limits{})
	require.ErrorContains(t, err, "is not a commit SHA")
}
