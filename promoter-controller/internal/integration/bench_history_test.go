package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
)

// historyLength is the length of the generated history: 20,000 commits, or SLUICE_BENCH_COMMITS.
var historyLength = func() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_COMMITS")); err == nil && n > 0 {
		return n
	}
	return 20000
}()

// servedHistory serves a copy of a bare repository whose dev branch has historyLength commits
// (generated once per machine, see gittest.CachedBare), with git http-backend when git is
// installed (so the server side costs what it costs on a real host), else with gittest's server.
func servedHistory(b *testing.B) (*gittest.Repo, string) {
	b.Helper()
	src := gittest.CachedBare(b, fmt.Sprintf("promoter-history-v1-%d", historyLength), func(dir string) {
		tip := gittest.GenerateHistory(b, dir, "dev", historyLength)
		repo := gittest.OpenBare(dir)
		repo.SetBranch(b, "main", tip)
		repo.SetBranch(b, "dev-next", tip)
	})
	dir := filepath.Join(b.TempDir(), "app.git")
	must(b, os.CopyFS(dir, os.DirFS(src)))
	repo := gittest.OpenBare(dir)
	url, stop, err := gittest.ServeWithGit(dir)
	if errors.Is(err, gittest.ErrNoGit) {
		srv := gittest.StartServer(filepath.Dir(dir))
		b.Cleanup(srv.Close)
		return repo, srv.URL("app")
	}
	must(b, err)
	b.Cleanup(stop)
	return repo, url
}

// advance plays the hydrator: one commit on dev-next with its note.
func advance(b *testing.B, repo *gittest.Repo, i int) string {
	tip := gittest.GenerateHistory(b, repo.Dir, "dev-next", 1)
	repo.AddNote(b, git.DefaultNotesRef, tip, string(git.HydratorNote(gittest.FakeDrySHA(historyLength+i))))
	return tip
}

// BenchmarkPromotionOn20kCommits measures one promotion cycle through the controller, running
// as its own process, on a repository of 20,000 commits: the refresh annotation, fetch, rules,
// pull request, go-git merge and compare-and-swap push, until the strategy reports the merge.
// It reports the process's peak RSS (peak-rss-MB). The baseline, in the same run, is the bare
// git cycle the controller wraps (fetch, merge, push with pkg/git, in-process), so the difference
// is the controller's own cost. BenchmarkPromotionCycle in pkg/git compares that cycle with the
// git CLI.
func BenchmarkPromotionOn20kCommits(b *testing.B) {
	testenv.SkipIfShort(b)
	b.Run("baseline-pkg-git-cycle", benchPkgGitCycle)
	b.Run("baseline-git-cli-cycle", benchGitCLICycle)
	b.Run("controller-process", benchControllerProcess)
}

// benchPkgGitCycle times one promotion cycle through pkg/git alone: fetch, merge and push.
func benchPkgGitCycle(b *testing.B) {
	remote, url := servedHistory(b)
	cache, err := git.NewCache(b.TempDir(), nil)
	must(b, err)
	repo, err := cache.Open(url, git.Auth{}, git.Options{})
	must(b, err)
	ctx := context.Background()
	must(b, repo.Fetch(ctx, "main", "dev", "dev-next"))
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		advance(b, remote, i)
		b.StartTimer()
		must(b, repo.Fetch(ctx, "main", "dev", "dev-next"))
		target, err := repo.Resolve("dev")
		must(b, err)
		_, err = repo.MergeAndPush(ctx, "dev-next", "dev", target, 3, git.MergeOptions{})
		must(b, err)
	}
}

// benchGitCLICycle times the same cycle with the git command line, the baseline beside it.
func benchGitCLICycle(b *testing.B) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		b.Skip("git is not on PATH")
	}
	remote, url := servedHistory(b)
	dir := filepath.Join(b.TempDir(), "cache.git")
	run := cliRun(gitBin, dir)
	started := time.Now()
	for _, args := range [][]string{{"init", "--quiet", "--bare", dir}, {"remote", "add", "origin", url}, append([]string{"fetch", "--quiet", "--no-tags", "origin"}, branchRefspecs("main", "dev", "dev-next")...)} {
		_, err := run(args...)
		must(b, err)
	}
	b.ReportMetric(time.Since(started).Seconds(), "start-and-clone-s")
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		advance(b, remote, i)
		b.StartTimer()
		must(b, cliPromote(run, "dev"))
	}
}

// benchControllerProcess times a promotion by the controller process, from a refresh to the history record.
func benchControllerProcess(b *testing.B) {
	remote, url := servedHistory(b)
	f := &fixture{t: nil, ctx: context.Background(), ns: fmt.Sprintf("bench-%d", time.Now().UnixNano())}
	createNamespaceAndRepo(b, f, url)
	_, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}},
		},
	}, metav1.CreateOptions{})
	must(b, err)
	started := time.Now()
	cmd := startControllerProcess(b, f.ns)
	// The first reconcile clones: until the strategy first reports its environment.
	must(b, testenv.Wait(f.ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && len(ps.Status.Environments) == 1 && ps.Status.Environments[0].Active.HydratedSHA != "", err
	}))
	b.ReportMetric(time.Since(started).Seconds(), "start-and-clone-s")

	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		tip := advance(b, remote, i)
		b.StartTimer()
		refreshB(b, f, fmt.Sprint("bench-", i))
		must(b, testenv.Wait(f.ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
			ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil || len(ps.Status.Environments) != 1 {
				return false, err
			}
			h := ps.Status.Environments[0].History
			return len(h) > 0 && h[0].HydratedSHA == tip, nil
		}))
	}
	b.StopTimer()
	if !remote.IsAncestor(b, remote.Branch(b, "dev-next"), remote.Branch(b, "dev")) {
		b.Fatal("the last promotion did not reach the server")
	}
	if hwm, err := peakRSS(cmd.Process.Pid); err == nil {
		b.ReportMetric(float64(hwm)/1024, "peak-rss-MB")
	} else {
		b.Logf("peak RSS not available: %v", err)
	}
}

func createNamespaceAndRepo(b *testing.B, f *fixture, url string) {
	b.Helper()
	must(b, createNamespace(f.ctx, f.ns))
	must(b, createPlainGitRepo(f.ctx, f.ns, "app", url))
}

// refreshB sets the refresh annotation (plain git sends no webhooks).
func refreshB(b *testing.B, f *fixture, value string) {
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, value)
	})
	must(b, err)
}

// startControllerProcess builds the controller and runs it against the control plane, watching
// only namespace ns: strategies other benchmarks left behind must not share its workers.
func startControllerProcess(b *testing.B, ns string) *exec.Cmd {
	b.Helper()
	logFile, err := os.Create(filepath.Join(b.TempDir(), "controller.log"))
	must(b, err)
	b.Cleanup(func() { _ = logFile.Close() })
	return runControllerProcess(b, buildController(b), ns, b.TempDir(), logFile)
}

// runControllerProcess runs the controller binary bin against the control plane, watching only
// namespace ns, with its git cache in cacheDir, its output to log and flags extra.
func runControllerProcess(tb testing.TB, bin, ns, cacheDir string, log io.Writer, extra ...string) *exec.Cmd {
	tb.Helper()
	return env.StartController(tb, bin, ns, log, append([]string{"--git-cache-dir", cacheDir}, extra...)...)
}

// buildController builds the controller binary once per test run and returns its path.
func buildController(tb testing.TB) string {
	return testenv.BuildCommand(tb, "promoter-controller/cmd/promoter-controller")
}

// peakRSS reads VmHWM, the peak resident set size in KiB, of a running process.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}
