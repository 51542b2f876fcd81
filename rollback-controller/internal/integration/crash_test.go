package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
	"github.com/sluicehq/sluice/testenv"
)

// kill is when one rollback-controller process gets its kill -9: after a delay, as soon as the
// server holds a push (the note and the revert branch are pushed by the rollback-controller, the
// merge by the promoter), or as soon as a step shows in the cluster or in git.
type kill struct {
	after  time.Duration
	onPush bool
	// step names what to wait for; see (*fixture).reached.
	step string
}

// killSchedule walks the kills through every step of a rollback: start-up, the policy's create,
// the note push, the branch push, the pull request, the merge asked for, the merge, the status.
var killSchedule = []kill{
	{after: 300 * time.Millisecond}, {step: "revertcommit"}, {onPush: true}, {onPush: true},
	{step: "pullrequest"}, {step: "merge asked"}, {step: "merged in git"}, {after: 700 * time.Millisecond},
	{after: time.Second},
}

const (
	pushWait = 4 * time.Second
	slowPush = 300 * time.Millisecond
)

// The rollback-controller killed with SIGKILL again and again through an automatic rollback,
// from the failing check to the merge, then left to finish with the same git cache, makes one
// RevertCommit, one revert commit, one pull request and one merge.
func TestKill9DuringARollbackMakesOneRevert(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("prod")
	f.strategy("prod")
	startPromoter(t, f.ns)
	d1 := f.dryCommit("web 1")
	healthy := f.promote("prod", d1, "web:1", success)
	d2 := f.dryCommit("web 2")
	bad := f.promote("prod", d2, "web:2", failure)
	f.policy(0, time.Hour, time.Hour)

	pushes := make(chan struct{}, 1)
	f.srv.BeforeRefUpdate(func(string) {
		select {
		case pushes <- struct{}{}:
		default:
		}
		time.Sleep(slowPush)
	})
	_, bin := binaries(t)
	cacheDir := t.TempDir()
	log := testenv.LogFile(t, "rollback-controller")
	flags := []string{"--git-cache-dir", cacheDir, "--revert-poll-interval", "1s", "--stalled-recheck-interval", "1s"}
	name := rollbackpolicy.RevertCommitName("prod", "prod", d2)

	f.killOnSchedule(bin, log, flags, name, pushes)

	before, err := os.Stat(log.Name())
	require.NoError(t, err)
	last := runProcess(t, bin, f.ns, log, flags...)
	rc := f.waitRevert(name, "merged after the kills", inPhase(rollbackv1alpha1.RevertMerged))
	// Interrupted only once it handles signals, after its caches synced.
	waitLogged(t, log.Name(), before.Size(), "caches synced; ready")
	require.NoError(t, last.Process.Signal(os.Interrupt))
	require.NoError(t, last.Wait(), "the last run stops cleanly")

	f.requireOneRevert(rc, healthy, bad)
	f.refresh("after the kills")
	f.waitEnv("prod", "back on d1, read from the revert's note", testenv.ActiveOn(d1))
	f.repo.CheckConnectivity(t)

	logText, err := os.ReadFile(log.Name())
	require.NoError(t, err)
	assert.NotContains(t, string(logText), "reconcile panicked")
}

// killOnSchedule runs the rollback-controller binary once per killSchedule entry and kills it -9
// at the entry's moment, logging how far the rollback of RevertCommit name got at each kill.
func (f *fixture) killOnSchedule(bin string, log *os.File, flags []string, name string, pushes chan struct{}) {
	f.t.Helper()
	for i, k := range killSchedule {
		select {
		case <-pushes:
		default:
		}
		cmd := runProcess(f.t, bin, f.ns, log, flags...)
		when := k.after.String()
		switch {
		case k.onPush:
			select {
			case <-pushes:
				when = "a push"
			case <-time.After(pushWait):
				when = "no push in " + pushWait.String()
			}
		case k.step != "":
			when = k.step
			if testenv.Wait(f.ctx, pushWait, func(context.Context) (bool, error) { return f.reached(name, k.step), nil }) != nil {
				when += " (not within " + pushWait.String() + ")"
			}
		default:
			time.Sleep(k.after)
		}
		testenv.Kill9(f.t, cmd, i+1)
		f.t.Logf("kill -9 #%d at %s: %s", i+1, when, f.rollbackPhase(name))
	}
}

// requireOneRevert asserts that the rollback made one RevertCommit, one revert commit and one
// pull request, and that one merge put prod back on the healthy tree.
func (f *fixture) requireOneRevert(rc *rollbackv1alpha1.RevertCommit, healthy, bad promoterv1alpha1.EnvironmentStatus) {
	t := f.t
	t.Helper()
	assert.Len(t, f.revertCommits(), 1, "one RevertCommit")
	assert.Equal(t, 1, f.revertCommitsIn("prod", string(rc.UID)), "one revert commit")
	f.oneRevertPR()
	// The revert commit sits on the bad commit, so one merge fast-forwards prod to it: anything
	// else at the tip is a second merge or a second commit.
	assert.Equal(t, rc.Status.RevertSHA, f.repo.Branch(t, "prod"))
	revert := f.repo.ReadCommit(t, rc.Status.RevertSHA)
	require.Len(t, revert.ParentHashes, 1)
	assert.Equal(t, bad.Active.HydratedSHA, revert.ParentHashes[0].String())
	assert.Equal(t, f.repo.ReadCommit(t, healthy.Active.HydratedSHA).TreeHash, revert.TreeHash)
}

// waitLogged waits until the log holds text after its first from bytes.
func waitLogged(t *testing.T, file string, from int64, text string) {
	t.Helper()
	require.NoError(t, testenv.Wait(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
		b, err := os.ReadFile(file)
		return err == nil && int64(len(b)) > from && strings.Contains(string(b[from:]), text), nil
	}), "%q logged by the last run", text)
}

// rollbackPhase says how far the rollback got: the RevertCommit, the revert branch, the pull
// request, the merge.
func (f *fixture) rollbackPhase(name string) string {
	var parts []string
	rc, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return "no RevertCommit"
	}
	parts = append(parts, "RevertCommit "+string(rc.Status.Phase))
	if tip := f.repo.Branch(f.t, "prod-revert-"+name); tip != "" {
		parts = append(parts, "branch pushed")
	}
	for _, pr := range f.pullRequests() {
		if pr.Labels[rollbackv1alpha1.RevertCommitLabel] != "" {
			parts = append(parts, "pull request "+string(pr.Spec.State)+"/"+string(pr.Status.State))
		}
	}
	if rc.Status.RevertSHA != "" && f.repo.Branch(f.t, "prod") == rc.Status.RevertSHA {
		parts = append(parts, "prod reverted")
	}
	return strings.Join(parts, ", ")
}

// reached says whether the rollback of RevertCommit name got to step.
func (f *fixture) reached(name, step string) bool {
	if _, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Get(f.ctx, name, metav1.GetOptions{}); err != nil {
		return false
	}
	var pr *promoterv1alpha1.PullRequest
	for _, p := range f.pullRequests() {
		if p.Labels[rollbackv1alpha1.RevertCommitLabel] != "" {
			pr = &p
		}
	}
	switch step {
	case "revertcommit":
		return true
	case "pullrequest":
		return pr != nil
	case "merge asked":
		return pr != nil && pr.Spec.State == promoterv1alpha1.PullRequestMerged
	case "merged in git":
		return pr != nil && pr.Spec.ExpectedHeadSHA != "" && f.repo.Branch(f.t, "prod") == pr.Spec.ExpectedHeadSHA
	}
	return false
}
