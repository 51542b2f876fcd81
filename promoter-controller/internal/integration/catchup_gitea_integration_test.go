package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
)

// A revert lands on staging after staging's next proposal was made (a fix forward pushed while
// the revert was in flight). Gitea merges only by fast-forward onto the expected base, and a
// three-way merge of the two versions of the manifest conflicts: the promoter catches
// staging-next up with staging, keeping the proposal's manifest, and the promotion lands.
func TestAProposalMadeBeforeARevertLandedIsPromotedOnGitea(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	srv, cloneURL, repo, d0 := giteaRepo(t, map[string][]byte{"values.yaml": []byte("v: 0\n")})
	hydrateTo(t, repo, "", "dev", d0, "v: 0\n")
	hydrateTo(t, repo, "", "staging", d0, "v: 0\n")
	_ = repo.Fetch(ctx, "main")
	d1, err := repo.CommitFiles(ctx, git.CommitRequest{Branch: "main", Files: map[string][]byte{"values.yaml": []byte("v: 1\n")}, Message: "fix forward"})
	require.NoError(t, err)
	devNext := hydrateTo(t, repo, "dev", "dev-next", d1, "dev v: 1\n")
	stagingNext := hydrateTo(t, repo, "staging", "staging-next", d1, "staging v: 1\n")
	// The revert, merged into staging after staging-next was proposed.
	require.NoError(t, repo.Fetch(ctx, "staging"))
	revert, err := repo.CommitFiles(ctx, git.CommitRequest{Branch: "staging", Message: "Revert the last promotion",
		Files: map[string][]byte{"hydrator.metadata": []byte(fmt.Sprintf(`{"drySha":%q}`, d0)), "manifest.yaml": []byte("staging reverted\n")}})
	require.NoError(t, err)

	giteaPromoter(t, f, srv, cloneURL)
	giteaLintPasses(t, f, srv, devNext)

	f.waitEnv("staging", "the fix forward promoted onto the revert", testenv.ActiveOn(d1))
	require.NoError(t, repo.Fetch(ctx, "staging"))
	tip, err := repo.Resolve("staging")
	require.NoError(t, err)
	commit, err := repo.Commit(tip)
	require.NoError(t, err)
	assert.Equal(t, revert, commit.Parents[0], "staging moved on from the revert, not around it")
	holds, err := repo.IsAncestor(stagingNext, tip)
	require.NoError(t, err)
	assert.True(t, holds, "staging holds the proposal")
	files, err := repo.ReadFiles(tip, "", func(p string) bool { return p == "manifest.yaml" }, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, "staging v: 1\n", string(files["manifest.yaml"]), "the proposal's manifest, whole")
	require.NoError(t, testenv.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		prs, err := giteaPulls(ctx, srv)
		merged := 0
		for _, p := range prs {
			if p.Merged {
				merged++
			}
		}
		return err == nil && merged == 2, err
	}), "both pull requests merged on Gitea")
}
