package gitea

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func skipIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real Gitea server (and builds it on first use)")
	}
}

func TestPushAndCommitStatus(t *testing.T) {
	skipIfShort(t)
	s := StartForTest(t)
	ctx := t.Context()

	cloneURL, err := s.CreateRepo(ctx, "app")
	require.NoError(t, err)

	sha := pushCommit(t, s, cloneURL, "main", "manifest.yaml", "replicas: 3\n")

	var branch struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	require.NoError(t, s.API(ctx, http.MethodGet, "/repos/"+s.AdminUser+"/app/branches/main", nil, &branch))
	assert.Equal(t, sha, branch.Commit.ID, "gitea's main branch should point at the pushed commit")

	sent := map[string]string{
		"state":       "failure",
		"context":     "sluice/health",
		"description": "2 of 3 replicas ready",
		"target_url":  "http://127.0.0.1/checks/42",
	}
	require.NoError(t, s.API(ctx, http.MethodPost, "/repos/"+s.AdminUser+"/app/statuses/"+sha, sent, nil))

	var combined struct {
		State    string `json:"state"`
		SHA      string `json:"sha"`
		Statuses []struct {
			State       string `json:"status"`
			Context     string `json:"context"`
			Description string `json:"description"`
			TargetURL   string `json:"target_url"`
		} `json:"statuses"`
	}
	require.NoError(t, s.API(ctx, http.MethodGet, "/repos/"+s.AdminUser+"/app/commits/"+sha+"/status", nil, &combined))
	assert.Equal(t, sha, combined.SHA)
	assert.Equal(t, sent["state"], combined.State)
	require.Len(t, combined.Statuses, 1)
	got := combined.Statuses[0]
	assert.Equal(t, sent["state"], got.State)
	assert.Equal(t, sent["context"], got.Context)
	assert.Equal(t, sent["description"], got.Description)
	assert.Equal(t, sent["target_url"], got.TargetURL)
}

func TestCreateRepo(t *testing.T) {
	skipIfShort(t)
	s := StartForTest(t)
	ctx := t.Context()

	cloneURL, err := s.CreateRepo(ctx, "seeded", AutoInit())
	require.NoError(t, err)

	repo, err := git.PlainCloneContext(ctx, t.TempDir(), false, &git.CloneOptions{
		URL:  cloneURL,
		Auth: &githttp.BasicAuth{Username: s.AdminUser, Password: s.Token},
	})
	require.NoError(t, err, "an auto-initialised repository should be clonable")
	head, err := repo.Head()
	require.NoError(t, err)
	assert.Equal(t, plumbing.NewBranchReferenceName("main"), head.Name())

	_, err = s.CreateRepo(ctx, "seeded")
	require.Error(t, err, "a second repository with the same name should be refused")
	assert.Contains(t, err.Error(), "409")
	assert.NotContains(t, err.Error(), s.Token)
}

func TestCloseStopsServer(t *testing.T) {
	skipIfShort(t)
	binDir, err := ensureBinDir(t.Context(), "")
	require.NoError(t, err)
	cachedOwner := ownerOf(t, filepath.Join(binDir, "gitea"))

	s, err := Start(t.Context(), Options{})
	require.NoError(t, err)
	require.NoError(t, s.API(t.Context(), http.MethodGet, "/version", nil, nil))
	assert.Equal(t, cachedOwner, ownerOf(t, filepath.Join(binDir, "gitea")),
		"starting gitea must not hand the shared cached binary to gitea's user")

	require.NoError(t, s.Close())

	_, err = os.Stat(s.dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "Close should remove the work folder")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	assert.Error(t, s.API(ctx, http.MethodGet, "/version", nil, nil), "nothing should answer after Close")
	assert.NoError(t, s.Close(), "a second Close should be harmless")
}

func TestStartRejectsEmptyBinDir(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(t.Context(), Options{BinDir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
	assert.Contains(t, err.Error(), "build.sh")
}

func ownerOf(t *testing.T, path string) uint32 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Sys().(*syscall.Stat_t).Uid
}

// pushCommit commits one file on a fresh local repository and pushes the branch to url.
func pushCommit(t *testing.T, s *Server, url, branch, file, content string) string {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)},
	})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	tree, err := repo.Worktree()
	require.NoError(t, err)
	_, err = tree.Add(file)
	require.NoError(t, err)
	hash, err := tree.Commit("add "+file, &git.CommitOptions{
		Author: &object.Signature{Name: "Sluice Test", Email: "test@example.com", When: time.Now()},
	})
	require.NoError(t, err)
	_, err = repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{url}})
	require.NoError(t, err)
	ref := plumbing.NewBranchReferenceName(branch)
	err = repo.PushContext(t.Context(), &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   []gitconfig.RefSpec{gitconfig.RefSpec(ref + ":" + ref)},
		Auth:       &githttp.BasicAuth{Username: s.AdminUser, Password: s.Token},
	})
	require.NoError(t, err)
	return hash.String()
}

func TestStartReportsGiteaOutput(t *testing.T) {
	binDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(binDir, "static", "options", "locale"), 0o755))
	failing := "#!/bin/sh\necho \"cannot open the database: disk on fire\" >&2\nexit 3\n"
	require.NoError(t, os.WriteFile(filepath.Join(binDir, "gitea"), []byte(failing), 0o755))

	_, err := Start(t.Context(), Options{BinDir: binDir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gitea migrate")
	assert.Contains(t, err.Error(), "disk on fire", "the error should carry gitea's own output")
}
