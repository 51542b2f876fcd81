package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/scm"
	_ "github.com/sluicehq/sluice/pkg/scm/builtin" // the gitea provider
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// BenchmarkTimeToRestoreOnGitea measures, on a real Gitea, the time from the failing health
// CommitStatus of a bad change in prod to the revert merged (the RevertCommit Merged): the
// RollbackPolicy's decision (failure threshold 0), the revert commit written and pushed, the
// PullRequest opened and merged on Gitea by the promoter-controller binary, and the merge seen.
// The baseline is the floor the SCM sets, as in the promoter's benchmark: pushing a commit and
// opening and merging its pull request by API directly, in the same run. It runs with checks off
// and with one required check on the revert.
func BenchmarkTimeToRestoreOnGitea(b *testing.B) {
	testenv.SkipIfShort(b)
	b.Run("baseline-gitea-api-push-open-and-merge", func(b *testing.B) {
		srv := giteatest.StartForTest(b)
		ctx := context.Background()
		_, err := srv.CreateRepo(ctx, "app", giteatest.AutoInit())
		require.NoError(b, err)
		p, err := scm.New("gitea", scm.Config{Key: "bench/gitea", BaseURL: srv.URL, AllowInsecureLoopbackHTTP: true,
			Credentials: scm.Credentials{Token: srv.Token}, Limiters: ratelimit.NewRegistry()})
		require.NoError(b, err)
		cache, err := git.NewCache(b.TempDir(), nil)
		require.NoError(b, err)
		repo, err := cache.Open(srv.URL+"/"+srv.AdminUser+"/app.git", git.Auth{Username: srv.AdminUser, Password: srv.Token}, git.Options{})
		require.NoError(b, err)
		sr := scm.Repository{Owner: srv.AdminUser, Name: "app"}
		b.ResetTimer()
		for i := range b.N {
			require.NoError(b, repo.Fetch(ctx, "main"))
			tip, err := repo.Resolve("main")
			require.NoError(b, err)
			branch := fmt.Sprint("revert-", i)
			require.NoError(b, repo.CreateBranch(ctx, branch, tip))
			require.NoError(b, repo.Fetch(ctx, branch))
			head, err := repo.CommitFiles(ctx, git.CommitRequest{Branch: branch, Message: "revert", Files: map[string][]byte{"manifest.yaml": []byte(fmt.Sprint(i))}})
			require.NoError(b, err)
			pr, err := p.CreatePullRequest(ctx, sr, scm.NewPullRequest{Title: "revert", Head: branch, Base: "main"})
			require.NoError(b, err)
			require.NoError(b, testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
				_, err := p.MergePullRequest(ctx, sr, pr.Number, scm.MergeOptions{ExpectedHeadSHA: head})
				return err == nil, nil
			}))
		}
	})
	for _, run := range []struct {
		name   string
		checks []string
	}{
		{name: "failing-status-to-revert-merged"},
		// The policy names one required check; a CI reports it passed on the revert commit as
		// soon as the test sees the commit written (polling every 50 ms).
		{name: "failing-status-to-revert-merged-one-check", checks: []string{"kubelint"}},
	} {
		b.Run(run.name, func(b *testing.B) {
			g := newOnGitea(b, 0, run.checks...)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				_, bad := g.goodThenBad(i + 1)
				b.StartTimer()
				g.failAndWaitRestored(bad)
			}
		})
	}
}
