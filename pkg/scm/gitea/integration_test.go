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

	t.Run("commit statuses", func(t *testing.T) {
		head := branchHead(t, srv, repo, "main")
		missing, err := p.GetCommitStatus(ctx, repo, head, "sluice/health")
		require.NoError(t, err)
		assert.Nil(t, missing)

		for _, state := range []scm.StatusState{scm.StatusPending, scm.StatusFailure, scm.StatusSuccess} {
			set, err := p.SetCommitStatus(ctx, repo, scm.CommitStatus{
				SHA: head, Name: "sluice/health", State: state, Description: "state " + string(state), TargetURL: "https://dash.example.com/app",
			})
			require.NoError(t, err)
			assert.NotEmpty(t, set.ProviderID)

			got, err := p.GetCommitStatus(ctx, repo, head, "sluice/health")
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, state, got.State)
			assert.Equal(t, "state "+string(state), got.Description)
			assert.Equal(t, "https://dash.example.com/app", got.TargetURL)
			assert.Equal(t, set.ProviderID, got.ProviderID)
		}

		_, err = p.SetCommitStatus(ctx, repo, scm.CommitStatus{SHA: head, Name: "x", State: scm.StatusSuccess})
		require.NoError(t, err)
		other, err := p.GetCommitStatus(ctx, repo, head, "sluice/health")
		require.NoError(t, err)
		assert.Equal(t, scm.StatusSuccess, other.State, "statuses of other contexts do not mix")

		_, err = p.SetCommitStatus(ctx, scm.Repository{Owner: srv.AdminUser, Name: "no-such-repo"},
			scm.CommitStatus{SHA: head, Name: "ci", State: scm.StatusSuccess})
		require.Error(t, err)
		assert.True(t, scm.IsNotFound(err), "%v", err)
		assert.True(t, scm.IsPermanent(err))
	})

	t.Run("pull requests", func(t *testing.T) {
		base := branchHead(t, srv, repo, "main")
		head := commitFile(t, srv, repo, "main", "env/staging-next", "staging.yaml", "replicas: 2\n")

		none, err := p.FindOpenPullRequest(ctx, repo, "env/staging-next", "main")
		require.NoError(t, err)
		assert.Nil(t, none)

		pr, err := p.CreatePullRequest(ctx, repo, scm.NewPullRequest{
			Title: "Promote to staging", Body: "dry 1a2b", Head: "env/staging-next", Base: "main",
		})
		require.NoError(t, err)
		assert.Equal(t, scm.PullRequestOpen, pr.State)
		assert.Equal(t, head, pr.HeadSHA)
		assert.NotEmpty(t, pr.URL)

		found, err := p.FindOpenPullRequest(ctx, repo, "env/staging-next", "main")
		require.NoError(t, err)
		require.NotNil(t, found)
		assert.Equal(t, pr.Number, found.Number)

		updated, err := p.UpdatePullRequest(ctx, repo, pr.Number, "Promote 1a2b to staging", "new body")
		require.NoError(t, err)
		assert.Equal(t, "Promote 1a2b to staging", updated.Title)
		got, err := p.GetPullRequest(ctx, repo, pr.Number)
		require.NoError(t, err)
		assert.Equal(t, "new body", got.Body)
		assert.Equal(t, scm.PullRequestOpen, got.State)

		// A merge that expects another head is refused by Gitea and nothing changes.
		_, err = merge(t, p, repo, pr.Number, base)
		require.Error(t, err)
		assert.True(t, scm.IsHeadMoved(err), "%v", err)
		got, err = p.GetPullRequest(ctx, repo, pr.Number)
		require.NoError(t, err)
		assert.Equal(t, scm.PullRequestOpen, got.State)
		assert.Equal(t, base, branchHead(t, srv, repo, "main"))

		res, err := merge(t, p, repo, pr.Number, head)
		require.NoError(t, err)
		assert.False(t, res.AlreadyMerged)
		assert.NotEmpty(t, res.MergeCommitSHA)
		assert.Equal(t, res.MergeCommitSHA, branchHead(t, srv, repo, "main"))

		again, err := merge(t, p, repo, pr.Number, head)
		require.NoError(t, err, "merging again at the same head is recognised as done")
		assert.True(t, again.AlreadyMerged)

		got, err = p.GetPullRequest(ctx, repo, pr.Number)
		require.NoError(t, err)
		assert.Equal(t, scm.PullRequestMerged, got.State)
		assert.Equal(t, res.MergeCommitSHA, got.MergeCommitSHA)
	})

	t.Run("close", func(t *testing.T) {
		commitFile(t, srv, repo, "main", "env/prod-next", "prod.yaml", "replicas: 3\n")
		pr, err := p.CreatePullRequest(ctx, repo, scm.NewPullRequest{Title: "Promote to prod", Head: "env/prod-next", Base: "main"})
		require.NoError(t, err)
		require.NoError(t, p.ClosePullRequest(ctx, repo, pr.Number))
		got, err := p.GetPullRequest(ctx, repo, pr.Number)
		require.NoError(t, err)
		assert.Equal(t, scm.PullRequestClosed, got.State)
		found, err := p.FindOpenPullRequest(ctx, repo, "env/prod-next", "main")
		require.NoError(t, err)
		assert.Nil(t, found, "a closed pull request is not found as open")
	})

	t.Run("bad token is unauthorized", func(t *testing.T) {
		bad, err := scm.New(Name, scm.Config{
			Key: "test/real-gitea-bad", BaseURL: srv.URL, AllowInsecureLoopbackHTTP: true,
			Credentials: scm.Credentials{Token: "0000000000000000000000000000000000000000"}, Limiters: ratelimit.NewRegistry(),
		})
		require.NoError(t, err)
		_, err = bad.SetCommitStatus(context.Background(), repo, scm.CommitStatus{
			SHA: branchHead(t, srv, repo, "main"), Name: "ci", State: scm.StatusSuccess,
		})
		require.Error(t, err)
		assert.Equal(t, scm.KindUnauthorized, scm.KindOf(err), "%v", err)
	})
}
