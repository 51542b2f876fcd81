package integration

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
)

// killSchedule says when each controller process gets its kill -9: after a varied delay, so the
// kills land in different phases (start-up, fetch, pull request, status writes), or as soon as
// the server holds a push of the run (onPush), the moment a crash is most likely to lose.
var killSchedule = []struct {
	after  time.Duration
	onPush bool
}{
	{after: 150 * time.Millisecond}, {onPush: true}, {after: 300 * time.Millisecond},
	{after: 500 * time.Millisecond}, {onPush: true}, {after: 250 * time.Millisecond},
	{after: 800 * time.Millisecond}, {onPush: true}, {after: 400 * time.Millisecond},
	{after: 1200 * time.Millisecond},
}

// pushWait bounds how long an onPush run waits for a push; once everything is promoted none comes.
const pushWait = 3 * time.Second

// slowPush holds every push at the server before it takes the ref update: a kill in that window
// leaves a merge the server applies after the controller is gone, which no run wrote down.
const slowPush = 300 * time.Millisecond

// A controller process killed with SIGKILL again and again while three environments promote in
// a row, then left to finish with the same git cache, ends with every environment promoted
// exactly once: one pull request and one history record each, no second merge on any branch.
func TestKill9MidPromotionLosesAndDuplicatesNothing(t *testing.T) {
	f := newFixture(t)
	envs := []string{"dev", "staging", "prod"}
	f.bootstrap(envs...)
	d1 := f.dryCommit("change")
	next := f.hydrate(d1, envs...)
	// No commit statuses: each environment goes as soon as the one before it runs d1.
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) { s.ActiveCommitStatuses = nil })
	pushes := make(chan struct{}, 1)
	f.srv.BeforeRefUpdate(func(string) {
		select {
		case pushes <- struct{}{}:
		default:
		}
		time.Sleep(slowPush)
	})

	bin := buildController(t)
	cacheDir := t.TempDir()
	logFile := testenv.LogFile(t, "controller")

	phases := f.killRepeatedly(bin, cacheDir, logFile, pushes, envs, next)
	t.Logf("kills by phase: %v", phases)

	last := runControllerProcess(t, bin, f.ns, cacheDir, logFile)
	for _, e := range envs {
		f.waitPromotedOnce(e, d1)
	}
	// A refresh is handled only after a fetch through the cache succeeded.
	f.refresh("after the kills")
	require.NoError(t, last.Process.Signal(os.Interrupt))
	require.NoError(t, last.Wait(), "the last run must stop cleanly")

	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, ps.Status.Environments, len(envs))
	for _, st := range ps.Status.Environments {
		e := st.Branch
		assert.Equal(t, d1, st.Active.DrySHA, e)
		// The hydrated commit sits on top of the environment's tip, so a promotion fast-forwards:
		// anything but the proposed commit at the tip is a second merge.
		assert.Equal(t, next[e], f.repo.Branch(t, e), "%s: the tip is the proposed commit, merged once", e)
		if assert.Len(t, st.History, 1, e) {
			assert.Equal(t, d1, st.History[0].DrySHA, e)
			assert.Equal(t, next[e], st.History[0].HydratedSHA, e)
			assert.False(t, st.History[0].External, "%s: the controller's own merge, finished after a crash, is not external", e)
		}
	}
	prs := f.pullRequests()
	assert.Len(t, prs, len(envs), "one pull request per environment")
	for _, pr := range prs {
		assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Status.State, pr.Name)
		assert.Equal(t, next[pr.Spec.TargetBranch], pr.Status.MergedHeadSHA, pr.Name)
		assert.False(t, pr.Status.MergedExternally, pr.Name)
	}
	f.repo.CheckConnectivity(t)
	t.Logf("pushes received by the server: %d", f.srv.Receives())

	logText, err := os.ReadFile(logFile.Name())
	require.NoError(t, err)
	assert.NotContains(t, string(logText), `"msg":"reconcile panicked"`)
	t.Logf("git cache recoveries in the controller's log: %d", strings.Count(string(logText), "git cache folder is damaged"))
	assert.Empty(t, cacheLeftovers(t, cacheDir), "what killed runs left half written is cleared")
	requireCacheUsable(t, cacheDir, f.srv.URL("app"), next)
}

// killRepeatedly runs the controller process once per killSchedule entry and kills it with
// SIGKILL at the scheduled moment; it returns how often each crash phase was hit.
func (f *fixture) killRepeatedly(bin, cacheDir string, logFile *os.File, pushes chan struct{}, envs []string, next map[string]string) map[string]int {
	f.t.Helper()
	phases := map[string]int{}
	for i, k := range killSchedule {
		select {
		case <-pushes: // a push the previous run left held at the server
		default:
		}
		cmd := runControllerProcess(f.t, bin, f.ns, cacheDir, logFile)
		when := k.after.String()
		if k.onPush {
			select {
			case <-pushes:
				when = "a push"
			case <-time.After(pushWait):
				when = "no push in " + pushWait.String()
			}
		} else {
			time.Sleep(k.after)
		}
		testenv.Kill9(f.t, cmd, i+1)
		phase := f.crashPhase(envs, next)
		phases[phase]++
		f.t.Logf("kill -9 #%d at %s: %s; partial files in the cache: %d", i+1, when, phase, len(cacheLeftovers(f.t, cacheDir)))
	}
	return phases
}

// cacheLeftovers lists the temporary files of interrupted pack and object writes in the cache.
func cacheLeftovers(t *testing.T, cacheDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cacheDir, "*", "objects", "pack", "tmp_*"))
	require.NoError(t, err)
	return files
}

// crashPhase says, cheaply, how far each environment got: "-" nothing yet, "pr" a pull request
// not merged in git, "git" merged in git but not yet recorded on the pull request, "merged"
// recorded on the pull request, "done" in the environment's history.
func (f *fixture) crashPhase(envs []string, next map[string]string) string {
	prs := map[string]promoterv1alpha1.PullRequest{}
	for _, pr := range f.pullRequests() {
		prs[pr.Spec.TargetBranch] = pr
	}
	history := map[string]int{}
	if ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{}); err == nil {
		for _, e := range ps.Status.Environments {
			history[e.Branch] = len(e.History)
		}
	}
	parts := make([]string, len(envs))
	for i, e := range envs {
		pr, hasPR := prs[e]
		state := "-"
		switch {
		case history[e] > 0:
			state = "done"
		case hasPR && pr.Status.State == promoterv1alpha1.PullRequestMerged:
			state = "merged"
		case f.repo.Branch(f.t, e) == next[e]:
			state = "git"
		case hasPR:
			state = "pr"
		}
		parts[i] = e + ":" + state
	}
	return strings.Join(parts, " ")
}

// waitPromotedOnce waits, generously for a slow machine, until branch runs dry and its history
// holds that promotion.
func (f *fixture) waitPromotedOnce(branch, dry string) {
	f.t.Helper()
	f.waitEnvWithin(3*time.Minute, branch, "promoted to "+dry+" after the kills", testenv.PromotedTo(dry))
}

// requireCacheUsable opens the cache the runs shared, as the next start would, and checks that
// it holds every environment at its promoted commit without having to be rebuilt.
func requireCacheUsable(t *testing.T, dir, url string, tips map[string]string) {
	t.Helper()
	var warnings bytes.Buffer
	cache, err := git.NewCache(dir, slog.New(slog.NewTextHandler(&warnings, nil)))
	require.NoError(t, err)
	repo, err := cache.Open(url, git.Auth{}, git.Options{})
	require.NoError(t, err)
	assert.Empty(t, warnings.String(), "the cache the last run left opens without recovery")
	for branch, sha := range tips {
		got, err := repo.Resolve(branch)
		require.NoError(t, err, branch)
		assert.Equal(t, sha, got, "%s in the cache", branch)
		_, err = repo.Commit(sha)
		assert.NoError(t, err, "%s: commit %s readable from the cache", branch, sha)
	}
}
