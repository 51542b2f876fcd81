package gitea

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// commitFile writes a file on branch (creating the branch from "from" when they differ) and
// returns the new head commit.
func commitFile(t *testing.T, srv *giteatest.Server, repo scm.Repository, from, branch, path, content string) string {
	t.Helper()
	in := map[string]any{
		"content": base64.StdEncoding.EncodeToString([]byte(content)),
		"message": "update " + path,
		"branch":  from,
	}
	if branch != from {
		in["new_branch"] = branch
	}
	var out struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	require.NoError(t, srv.API(t.Context(), http.MethodPost, fmt.Sprintf("/repos/%s/contents/%s", repo, path), in, &out))
	require.NotEmpty(t, out.Commit.SHA)
	return out.Commit.SHA
}

func branchHead(t *testing.T, srv *giteatest.Server, repo scm.Repository, branch string) string {
	t.Helper()
	var out struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	require.NoError(t, srv.API(t.Context(), http.MethodGet, fmt.Sprintf("/repos/%s/branches/%s", repo, branch), nil, &out))
	require.NotEmpty(t, out.Commit.ID)
	return out.Commit.ID
}

// merge retries while Gitea is still checking mergeability, as a controller would on a transient
// error. The check runs on a background queue in the harness, so it usually ends within a second;
// the bound is generous for a loaded machine.
func merge(t *testing.T, p scm.Provider, repo scm.Repository, number int64, head string) (*scm.MergeResult, error) {
	t.Helper()
	for range 240 {
		res, err := p.MergePullRequest(t.Context(), repo, number, scm.MergeOptions{ExpectedHeadSHA: head})
		if err == nil || scm.KindOf(err) != scm.KindTransient {
			return res, err
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("pull request #%d stayed unmergeable", number)
	return nil, nil
}

// TestAgainstRealGitea runs statuses and the whole pull request life, including the expected-head
// guard, against a Gitea server built from its Go module and started on loopback.
func TestAgainstRealGitea(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Gitea server")
	}
	srv := giteatest.StartForTest(t)
	ctx := t.Context()
	_, err := srv.CreateRepo(ctx, "app", giteatest.AutoInit())
	require.NoError(t, err)
	repo := scm.Repository{Owner: srv.AdminUser, Name: "app"}

	p, err := scm.New(Name, scm.Config{
		Key:                       "test/real-gitea",
		BaseURL:                   srv.URL,
		AllowInsecureLoopbackHTTP: true,
		Credentials:               scm.Credentials{Token: srv.Token},
		Limiters:                  ratelimit.NewRegistry(),
	})
	require.NoError(t, err)
	g := realGitea{srv: srv, p: p, repo: repo}

	t.Run("commit statuses", g.commitStatuses)
	t.Run("pull requests", g.pullRequests)
	t.Run("close", g.closePullRequest)
	t.Run("conflicting pull request", g.conflictingPullRequest)
	t.Run("bad token is unauthorized", g.badToken)
}

// realGitea is a provider on a real Gitea, and the repository its steps work on.
type realGitea struct {
	srv  *giteatest.Server
	p    scm.Provider
	repo scm.Repository
}

// commitStatuses sets each state of one context on a commit and reads it back; another context does not mix in, and an unknown repository is permanent.
func (g realGitea) commitStatuses(t *testing.T) {
	head := branchHead(t, g.srv, g.repo, "main")
	missing, err := g.p.GetCommitStatus(t.Context(), g.repo, head, "sluice/health")
	require.NoError(t, err)
	assert.Nil(t, missing)

	for _, state := range []scm.StatusState{scm.StatusPending, scm.StatusFailure, scm.StatusSuccess} {
		set, err := g.p.SetCommitStatus(t.Context(), g.repo, scm.CommitStatus{
			SHA: head, Name: "sluice/health", State: state, Description: "state " + string(state), TargetURL: "https://dash.example.com/app",
		})
		require.NoError(t, err)
		assert.NotEmpty(t, set.ProviderID)

		got, err := g.p.GetCommitStatus(t.Context(), g.repo, head, "sluice/health")
		require.NoError(t, err)
		require.NotNil(t, got)
		assert.Equal(t, state, got.State)
		assert.Equal(t, "state "+string(state), got.Description)
		assert.Equal(t, "https://dash.example.com/app", got.TargetURL)
		assert.Equal(t, set.ProviderID, got.ProviderID)
	}

	_, err = g.p.SetCommitStatus(t.Context(), g.repo, scm.CommitStatus{SHA: head, Name: "x", State: scm.StatusSuccess})
	require.NoError(t, err)
	other, err := g.p.GetCommitStatus(t.Context(), g.repo, head, "sluice/health")
	require.NoError(t, err)
	assert.Equal(t, scm.StatusSuccess, other.State, "statuses of other contexts do not mix")

	_, err = g.p.SetCommitStatus(t.Context(), scm.Repository{Owner: g.srv.AdminUser, Name: "no-such-repo"},
		scm.CommitStatus{SHA: head, Name: "ci", State: scm.StatusSuccess})
	require.Error(t, err)
	assert.True(t, scm.IsNotFound(err), "%v", err)
	assert.True(t, scm.IsPermanent(err))
}

// pullRequests opens, finds, edits and merges a pull request, a merge at another head refused and a second merge recognised as done.
func (g realGitea) pullRequests(t *testing.T) {
	base := branchHead(t, g.srv, g.repo, "main")
	head := commitFile(t, g.srv, g.repo, "main", "env/staging-next", "staging.yaml", "replicas: 2\n")

	none, err := g.p.FindOpenPullRequest(t.Context(), g.repo, "env/staging-next", "main")
	require.NoError(t, err)
	assert.Nil(t, none)

	pr, err := g.p.CreatePullRequest(t.Context(), g.repo, scm.NewPullRequest{
		Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next", Base: "main",
	})
	require.NoError(t, err)
	assert.Equal(t, scm.PullRequestOpen, pr.State)
	assert.Equal(t, head, pr.HeadSHA)
	assert.NotEmpty(t, pr.URL)

	found, err := g.p.FindOpenPullRequest(t.Context(), g.repo, "env/staging-next", "main")
	require.NoError(t, err)
	require.NotNil(t, found)
	assert.Equal(t, pr.Number, found.Number)

	updated, err := g.p.UpdatePullRequest(t.Context(), g.repo, pr.Number, "Promote 1a2b to staging", "new body")
	require.NoError(t, err)
	assert.Equal(t, "Promote 1a2b to staging", updated.Title)
	got, err := g.p.GetPullRequest(t.Context(), g.repo, pr.Number)
	require.NoError(t, err)
	assert.Equal(t, "new body", got.Body)
	assert.Equal(t, scm.PullRequestOpen, got.State)

	// A merge that expects another head is refused by Gitea and nothing changes.
	_, err = merge(t, g.p, g.repo, pr.Number, base)
	require.Error(t, err)
	assert.True(t, scm.IsHeadMoved(err), "%v", err)
	got, err = g.p.GetPullRequest(t.Context(), g.repo, pr.Number)
	require.NoError(t, err)
	assert.Equal(t, scm.PullRequestOpen, got.State)
	assert.Equal(t, base, branchHead(t, g.srv, g.repo, "main"))

	res, err := merge(t, g.p, g.repo, pr.Number, head)
	require.NoError(t, err)
	assert.False(t, res.AlreadyMerged)
	assert.NotEmpty(t, res.MergeCommitSHA)
	assert.Equal(t, res.MergeCommitSHA, branchHead(t, g.srv, g.repo, "main"))

	again, err := merge(t, g.p, g.repo, pr.Number, head)
	require.NoError(t, err, "merging again at the same head is recognised as done")
	assert.True(t, again.AlreadyMerged)

	got, err = g.p.GetPullRequest(t.Context(), g.repo, pr.Number)
	require.NoError(t, err)
	assert.Equal(t, scm.PullRequestMerged, got.State)
	assert.Equal(t, res.MergeCommitSHA, got.MergeCommitSHA)
}

// closePullRequest closes a pull request, which is then not found as open.
func (g realGitea) closePullRequest(t *testing.T) {
	commitFile(t, g.srv, g.repo, "main", "env/prod-next", "prod.yaml", "replicas: 3\n")
	pr, err := g.p.CreatePullRequest(t.Context(), g.repo, scm.NewPullRequest{Title: "Promote to prod", Head: "env/prod-next", Base: "main"})
	require.NoError(t, err)
	require.NoError(t, g.p.ClosePullRequest(t.Context(), g.repo, pr.Number))
	got, err := g.p.GetPullRequest(t.Context(), g.repo, pr.Number)
	require.NoError(t, err)
	assert.Equal(t, scm.PullRequestClosed, got.State)
	found, err := g.p.FindOpenPullRequest(t.Context(), g.repo, "env/prod-next", "main")
	require.NoError(t, err)
	assert.Nil(t, found, "a closed pull request is not found as open")
}

// updateFile replaces an existing file on branch from (on a new branch when they differ).
func updateFile(t *testing.T, srv *giteatest.Server, repo scm.Repository, from, branch, path, content string) {
	t.Helper()
	var cur struct {
		SHA string `json:"sha"`
	}
	require.NoError(t, srv.API(t.Context(), http.MethodGet, fmt.Sprintf("/repos/%s/contents/%s?ref=%s", repo, path, from), nil, &cur))
	in := map[string]any{
		"content": base64.StdEncoding.EncodeToString([]byte(content)),
		"message": "update " + path, "branch": from, "sha": cur.SHA,
	}
	if branch != from {
		in["new_branch"] = branch
	}
	require.NoError(t, srv.API(t.Context(), http.MethodPut, fmt.Sprintf("/repos/%s/contents/%s", repo, path), in, nil))
}

// conflictingPullRequest changes one line on both sides: Gitea refuses the merge with the same
// "try again later" as while it checks, so the refusal is transient and names the conflict as a
// possible cause, and nothing is merged however often it is asked.
func (g realGitea) conflictingPullRequest(t *testing.T) {
	commitFile(t, g.srv, g.repo, "main", "main", "dev.yaml", "replicas: 1\n")
	updateFile(t, g.srv, g.repo, "main", "env/dev-next", "dev.yaml", "replicas: 2\n")
	updateFile(t, g.srv, g.repo, "main", "main", "dev.yaml", "replicas: 5\n")
	base := branchHead(t, g.srv, g.repo, "main")
	head := branchHead(t, g.srv, g.repo, "env/dev-next")
	pr, err := g.p.CreatePullRequest(t.Context(), g.repo, scm.NewPullRequest{Title: "Promote to dev", Head: "env/dev-next", Base: "main"})
	require.NoError(t, err)

	for range 20 {
		_, err = g.p.MergePullRequest(t.Context(), g.repo, pr.Number, scm.MergeOptions{ExpectedHeadSHA: head})
		require.Error(t, err)
		assert.Equal(t, scm.KindTransient, scm.KindOf(err), "%v", err)
		assert.Contains(t, err.Error(), "conflicts with its target branch")
		time.Sleep(250 * time.Millisecond)
	}
	assert.Equal(t, base, branchHead(t, g.srv, g.repo, "main"), "nothing merged")
	got, err := g.p.GetPullRequest(t.Context(), g.repo, pr.Number)
	require.NoError(t, err)
	assert.Equal(t, scm.PullRequestOpen, got.State)
}

// badToken is told unauthorized.
func (g realGitea) badToken(t *testing.T) {
	bad, err := scm.New(Name, scm.Config{
		Key: "test/real-gitea-bad", BaseURL: g.srv.URL, AllowInsecureLoopbackHTTP: true,
		Credentials: scm.Credentials{Token: "0000000000000000000000000000000000000000"}, Limiters: ratelimit.NewRegistry(),
	})
	require.NoError(t, err)
	_, err = bad.SetCommitStatus(context.Background(), g.repo, scm.CommitStatus{
		SHA: branchHead(t, g.srv, g.repo, "main"), Name: "ci", State: scm.StatusSuccess,
	})
	require.Error(t, err)
	assert.Equal(t, scm.KindUnauthorized, scm.KindOf(err), "%v", err)
}
