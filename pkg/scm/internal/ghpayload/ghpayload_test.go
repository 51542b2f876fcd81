package ghpayload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
)

var (
	github = Dialect{Provider: "github", SynchronizeAction: "synchronize", PushDeletedFlag: true, Ping: true}
	gitea  = Dialect{Provider: "gitea", SynchronizeAction: "synchronized", OwnerUserName: true}
)

// The dialects differ only where the SCMs do; each difference is checked from both sides.
func TestDialectsDifferWhereTheSCMsDo(t *testing.T) {
	t.Run("synchronize action", func(t *testing.T) {
		for _, tc := range []struct {
			d      Dialect
			action string
			want   scm.PullRequestAction
		}{
			{github, "synchronize", scm.ActionSynchronized},
			{github, "synchronized", scm.ActionOther},
			{gitea, "synchronized", scm.ActionSynchronized},
			{gitea, "synchronize", scm.ActionOther},
			{Dialect{Provider: "none"}, "", scm.ActionOther},
		} {
			ev, err := tc.d.Parse("pull_request", []byte(`{"action":"`+tc.action+`","number":7}`))
			require.NoError(t, err)
			assert.Equal(t, tc.want, ev.PullRequest.Action, "%s %q", tc.d.Provider, tc.action)
		}
	})

	t.Run("deleted flag", func(t *testing.T) {
		body := []byte(`{"ref":"refs/heads/x","after":"1111111111111111111111111111111111111111","deleted":true}`)
		ev, err := github.Parse("push", body)
		require.NoError(t, err)
		assert.True(t, ev.Push.Deleted)
		ev, err = gitea.Parse("push", body)
		require.NoError(t, err)
		assert.False(t, ev.Push.Deleted, "Gitea sends no deleted flag; only an all-zero after counts")

		_, err = github.Parse("push", []byte(`{"ref":"refs/heads/x","deleted":"yes"}`))
		assert.ErrorContains(t, err, "github push payload is not valid JSON")
		_, err = gitea.Parse("push", []byte(`{"ref":"refs/heads/x","deleted":"yes"}`))
		assert.NoError(t, err, "a field Gitea does not have is not read")
	})

	t.Run("owner username", func(t *testing.T) {
		body := []byte(`{"ref":"refs/heads/x","repository":{"name":"app","owner":{"login":"login","username":"user"}}}`)
		ev, err := gitea.Parse("push", body)
		require.NoError(t, err)
		assert.Equal(t, scm.Repository{Owner: "user", Name: "app"}, ev.Repository)
		ev, err = github.Parse("push", body)
		require.NoError(t, err)
		assert.Equal(t, scm.Repository{Owner: "login", Name: "app"}, ev.Repository)

		_, err = gitea.Parse("push", []byte(`{"ref":"refs/heads/x","repository":{"owner":{"username":5}}}`))
		assert.ErrorContains(t, err, "repository.owner.username")
		_, err = github.Parse("push", []byte(`{"ref":"refs/heads/x","repository":{"owner":{"username":5}}}`))
		assert.NoError(t, err, "a field GitHub does not have is not read")
	})

	t.Run("ping", func(t *testing.T) {
		body := []byte(`{"zen":"hi","repository":{"full_name":"acme/app"}}`)
		ev, err := github.Parse("ping", body)
		require.NoError(t, err)
		assert.Equal(t, scm.EventPing, ev.Kind)
		assert.Equal(t, scm.Repository{Owner: "acme", Name: "app"}, ev.Repository)
		ev, err = gitea.Parse("ping", body)
		require.NoError(t, err)
		assert.Equal(t, scm.EventIgnored, ev.Kind)
	})
}

func TestPullRequestStateAndNumber(t *testing.T) {
	ev, err := github.Parse("pull_request", []byte(`{"action":"closed","number":9,"pull_request":{"number":4,
		"merged":true,"state":"closed","merge_commit_sha":"abc","head":{"ref":"h","sha":"s"},"base":{"ref":"b"}}}`))
	require.NoError(t, err)
	assert.Equal(t, scm.ActionMerged, ev.PullRequest.Action)
	assert.Equal(t, scm.PullRequest{Number: 4, Head: "h", HeadSHA: "s", Base: "b", State: scm.PullRequestMerged,
		MergeCommitSHA: "abc"}, ev.PullRequest.PullRequest, "the pull request's own number wins over the event's")

	ev, err = gitea.Parse("pull_request", []byte(`{"action":"closed","number":9,"pull_request":{"state":"closed"}}`))
	require.NoError(t, err)
	assert.Equal(t, scm.ActionClosed, ev.PullRequest.Action)
	assert.Equal(t, scm.PullRequestClosed, ev.PullRequest.PullRequest.State)
	assert.Equal(t, int64(9), ev.PullRequest.PullRequest.Number)

	_, err = gitea.Parse("pull_request", []byte(`{"number":-2}`))
	assert.ErrorContains(t, err, "gitea pull_request payload has no pull request number")
}
