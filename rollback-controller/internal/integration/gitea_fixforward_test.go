package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
)

// holdScript is a pre-receive hook that holds the first push to a branch made once the test armed
// it (a file "armed"), until the test releases it (a file "released"), and tells the test what
// that push carries (a file "held": old and new SHA). Other pushes pass: the test's own included.
// Gitea's merge pushes to the repository from a temporary clone, so its hooks run for a merge.
const holdScript = `#!/bin/sh
ctl=%q
while read old new ref; do
  if [ "$ref" = "refs/heads/%s" ] && mv "$ctl/armed" "$ctl/taken" 2>/dev/null; then
    echo "$old $new" > "$ctl/held.tmp" && mv "$ctl/held.tmp" "$ctl/held"
    i=0
    while [ ! -e "$ctl/released" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
  fi
done
exit 0
`

// heldPush is the push a hold stops in Gitea's pre-receive hook.
type heldPush struct {
	tb  testing.TB
	ctl string
}

// holdNextPushTo installs, in Gitea's repository on disk, a pre-receive hook holding the next
// push to branch: a push Gitea's merge API makes itself, after every check of its own.
func (g *onGitea) holdNextPushTo(branch string) *heldPush {
	g.tb.Helper()
	repo := g.srv.RepoDir(g.srv.AdminUser, "app")
	// Inside Gitea's own folder, which the user Gitea runs as (maybe nobody) can reach.
	h := &heldPush{tb: g.tb, ctl: filepath.Join(repo, "sluice-test-hold")}
	require.NoError(g.tb, os.Mkdir(h.ctl, 0o777))
	require.NoError(g.tb, os.Chmod(h.ctl, 0o777), "writable by the user Gitea runs as")
	hook := filepath.Join(repo, "hooks", "pre-receive.d", "sluice-test-hold")
	require.NoError(g.tb, os.WriteFile(hook, fmt.Appendf(nil, holdScript, h.ctl, branch), 0o755))
	require.NoError(g.tb, os.WriteFile(filepath.Join(h.ctl, "armed"), nil, 0o666))
	g.tb.Cleanup(h.release)
	return h
}

// wait waits until the push is held and returns the old and new SHA of the branch it updates.
func (h *heldPush) wait(ctx context.Context) (old, new string) {
	h.tb.Helper()
	require.NoError(h.tb, testenv.Wait(ctx, 2*time.Minute, func(context.Context) (bool, error) {
		b, err := os.ReadFile(filepath.Join(h.ctl, "held"))
		if err != nil {
			return false, nil
		}
		old, new, _ = strings.Cut(strings.TrimSpace(string(b)), " ")
		return true, nil
	}), "a push to the branch held in Gitea's pre-receive hook")
	return old, new
}

// release lets the held push go on.
func (h *heldPush) release() {
	_ = os.WriteFile(filepath.Join(h.ctl, "released"), nil, 0o666)
}

// On a real Gitea, a fix forward pushed to prod while Gitea merges the revert (the promoter asked
// Gitea's merge API, which has checked the pull request and is pushing the revert to prod) is
// never overwritten: that push is refused, the RevertCommit ends Superseded naming the fix's dry
// commit, and its pull request on Gitea is closed unmerged.
func TestFixPushedDuringTheMergeOnGiteaSupersedesTheRevert(t *testing.T) {
	g := newOnGitea(t, time.Hour)
	_, bad := g.goodThenBad(0)
	fixDry := g.dry("web 3, the fix")
	hold := g.holdNextPushTo("prod")

	g.setHealth(bad.Active.HydratedSHA, failure)
	heldOld, heldNew := hold.wait(g.ctx)
	require.NoError(t, g.repo.Fetch(g.ctx, "prod"))
	fix := g.commit("prod", fixDry, "image: web:3\n")
	hold.release()

	name := rollbackpolicy.RevertCommitName("prod", "prod", bad.Active.DrySHA)
	var rc *rollbackv1alpha1.RevertCommit
	require.NoError(t, testenv.Wait(g.ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		rc, err = env.Sluice.RollbackV1alpha1().RevertCommits(g.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && revertcommit.Final(rc.Status.Phase), nil
	}), "revert %s over; last %+v", name, statusOf(rc))
	require.Equal(t, rollbackv1alpha1.RevertSuperseded, rc.Status.Phase, "%+v", rc.Status)

	assert.Equal(t, bad.Active.HydratedSHA, heldOld, "the push held was onto the bad commit")
	assert.Equal(t, rc.Status.RevertSHA, heldNew, "the push held was Gitea's merge of the revert commit")
	ready := readyCondition(rc)
	require.NotNil(t, ready)
	assert.Equal(t, "FixedForward", ready.Reason)
	assert.Contains(t, ready.Message, text.ShortSHA(fixDry), "the message names the fix's dry commit")

	require.NoError(t, g.repo.Fetch(g.ctx, "prod"))
	tip, err := g.repo.Resolve("prod")
	require.NoError(t, err)
	assert.Equal(t, fix, tip, "prod keeps the fix: nothing merged over it")
	c, err := g.repo.Commit(tip)
	require.NoError(t, err)
	assert.Equal(t, []string{bad.Active.HydratedSHA}, c.Parents, "prod is the bad commit and the fix on it: the revert commit never reached prod")

	var pulls, reverts []giteaPull
	require.NoError(t, testenv.Wait(g.ctx, time.Minute, func(ctx context.Context) (bool, error) {
		pulls, reverts = nil, nil
		if err := g.srv.API(ctx, "GET", "/repos/"+g.srv.AdminUser+"/app/pulls?state=all", nil, &pulls); err != nil {
			return false, err
		}
		for _, p := range pulls {
			if p.Head.Ref == rc.Status.RevertBranch {
				reverts = append(reverts, p)
			}
		}
		return len(reverts) == 1 && reverts[0].State == "closed", nil
	}), "the revert's pull request on Gitea closed: %+v", pulls)
	assert.False(t, reverts[0].Merged, "closed unmerged")
	list, err := env.Sluice.RollbackV1alpha1().RevertCommits(g.ns).List(g.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1, "no second revert")
}
