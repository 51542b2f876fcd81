package git_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

// historyLength is the length of the benchmark repository's history: 20,000 commits, or
// SLUICE_BENCH_COMMITS.
var historyLength = benchCommits()

func benchCommits() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_COMMITS")); err == nil && n > 0 {
		return n
	}
	return 20000
}

// benchRoot holds what benchmarks build once per run, and the servers they start; TestMain
// stops and removes them.
var benchRoot struct {
	once  sync.Once
	dir   string
	stops []func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, stop := range benchRoot.stops {
		stop()
	}
	if benchRoot.dir != "" {
		_ = os.RemoveAll(benchRoot.dir)
	}
	os.Exit(code)
}

func benchDir(b *testing.B, name string) string {
	b.Helper()
	benchRoot.once.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-git-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchRoot.dir = dir
	})
	dir := filepath.Join(benchRoot.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	return dir
}

// bigRepo is the generated repository, built once per run: dev-next has historyLength commits
// in a line; dev is dev-next plus one commit of its own, as an earlier promotion leaves it, so
// every promotion needs a merge commit.
var bigRepo struct {
	once sync.Once
	dir  string
}

func generatedRepo(b *testing.B) string {
	bigRepo.once.Do(func() {
		bigRepo.dir = gittest.CachedBare(b, fmt.Sprintf("promotion-cycle-v1-%d", historyLength), func(dir string) {
			tip := gittest.GenerateHistory(b, dir, "dev-next", historyLength)
			repo := gittest.OpenBare(dir)
			repo.SetBranch(b, "dev", tip)
			repo.CommitFiles(b, "dev", map[string]string{"promoted-by": "an earlier promotion"}, "earlier promotion\n")
			repo.AddNote(b, git.DefaultNotesRef, tip, string(git.HydratorNote(gittest.FakeDrySHA(0))))
		})
	})
	if bigRepo.dir == "" {
		b.Fatal("the generated repository could not be built")
	}
	return bigRepo.dir
}

// cycleEnv is one client's side of the benchmark: a served copy of the generated repository and
// a primed cache. Benchmark functions run more than once per run (b.N = 1 first); the
// environment is built once and reused, so only promotions are repeated.
type cycleEnv struct {
	remote *gittest.Repo
	url    string
	cycle  func(ctx context.Context) error
}

var cycleEnvs = map[string]*cycleEnv{}

// serve serves a fresh copy of the generated repository, with git http-backend when git is
// installed (both clients then meet a real git server), else with gittest's go-git server.
func serve(b *testing.B, name string) (*gittest.Repo, string) {
	src := generatedRepo(b)
	dir := filepath.Join(benchDir(b, name), "app.git")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	url, stop, err := gittest.ServeWithGit(dir)
	if errors.Is(err, gittest.ErrNoGit) {
		srv := gittest.StartServer(filepath.Dir(dir))
		benchRoot.stops = append(benchRoot.stops, srv.Close)
		b.Logf("git is not installed: serving with gittest's go-git server")
		return srv.Repo(b, "app"), srv.URL("app")
	}
	if err != nil {
		b.Fatal(err)
	}
	benchRoot.stops = append(benchRoot.stops, stop)
	return gittest.OpenBare(dir), url
}

// advance plays the hydrator: a new commit on dev-next and its note.
func (e *cycleEnv) advance(b *testing.B) {
	tip := gittest.GenerateHistory(b, e.remote.Dir, "dev-next", 1)
	e.remote.AddNote(b, git.DefaultNotesRef, tip, string(git.HydratorNote(gittest.FakeDrySHA(1))))
}

func runCycles(b *testing.B, name string, setup func(b *testing.B, e *cycleEnv)) {
	e, ok := cycleEnvs[name]
	if !ok {
		e = &cycleEnv{}
		e.remote, e.url = serve(b, name)
		setup(b, e)
		cycleEnvs[name] = e
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		e.advance(b)
		b.StartTimer()
		if err := e.cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if next, dev := e.remote.Branch(b, "dev-next"), e.remote.Branch(b, "dev"); !e.remote.IsAncestor(b, next, dev) {
		b.Fatalf("the last promotion did not reach the server: dev %s does not contain dev-next %s", dev, next)
	}
}

// BenchmarkPromotionCycle measures one promotion on a repository with 20,000 commits: fetch dev
// and dev-next (and the notes), merge dev-next into dev with a merge commit, push dev as a
// compare-and-swap. The git CLI doing the same steps is the baseline, measured in the same run,
// and each go-git variant reports its time as a multiple of it (metric x-cli).
func BenchmarkPromotionCycle(b *testing.B) {
	var cliNsPerOp float64
	ratio := func(b *testing.B) {
		if cliNsPerOp > 0 && b.N > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/cliNsPerOp, "x-cli")
		}
	}

	b.Run("git-cli", func(b *testing.B) {
		gitBin, err := exec.LookPath("git")
		if err != nil {
			b.Skip("git is not on PATH")
		}
		runCycles(b, "git-cli", cliClient(gitBin))
		if b.N > 0 {
			cliNsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		}
	})

	b.Run("go-git", func(b *testing.B) {
		runCycles(b, "go-git", goGitClient())
		ratio(b)
	})

	// go-git's Remote.Push with RequireRemoteRefs, for comparison: the same fetch and merge, but
	// the push lists every object of the history first (see the package documentation).
	b.Run("go-git-remote-push", func(b *testing.B) {
		runCycles(b, "go-git-remote-push", remotePushClient())
		ratio(b)
	})
}

// cliClient sets a cycle up with the git command line: a bare clone, fetched.
func cliClient(gitBin string) func(*testing.B, *cycleEnv) {
	return func(b *testing.B, e *cycleEnv) {
		dir := filepath.Join(benchDir(b, "git-cli-client"), "cache.git")
		run := cliRunner(gitBin, dir)
		for _, args := range [][]string{{"init", "--quiet", "--bare", dir}, {"remote", "add", "origin", e.url}} {
			if _, err := run(args...); err != nil {
				b.Fatal(err)
			}
		}
		e.cycle = func(context.Context) error { return cliCycle(run) }
		if _, err := run(append([]string{"fetch", "--quiet", "--no-tags", "origin"}, cliRefspecs...)...); err != nil {
			b.Fatal(err)
		}
	}
}

// goGitClient sets a cycle up with this package: fetch, merge and push.
func goGitClient() func(*testing.B, *cycleEnv) {
	return func(b *testing.B, e *cycleEnv) {
		repo := openBench(b, e.url)
		e.cycle = func(ctx context.Context) error {
			if err := repo.Fetch(ctx, "dev", "dev-next"); err != nil {
				return err
			}
			expected, err := repo.Resolve("dev")
			if err != nil {
				return err
			}
			res, err := repo.MergeAndPush(ctx, "dev-next", "dev", expected, 3, git.MergeOptions{Message: "Promote dev-next into dev\n"})
			if err == nil && res.Kind != git.MergeCommit {
				err = fmt.Errorf("expected a merge commit, got %s", res.Kind)
			}
			return err
		}
	}
}

// remotePushClient sets a cycle up with go-git's Remote.Push for the push.
func remotePushClient() func(*testing.B, *cycleEnv) {
	return func(b *testing.B, e *cycleEnv) {
		root := benchDir(b, "go-git-remote-push-client")
		repo := openBenchIn(b, root, e.url)
		entries, err := os.ReadDir(root)
		if err != nil || len(entries) != 1 {
			b.Fatalf("expected one cached repository in %s: %v", root, err)
		}
		dir := filepath.Join(root, entries[0].Name())
		e.cycle = func(ctx context.Context) error {
			if err := repo.Fetch(ctx, "dev", "dev-next"); err != nil {
				return err
			}
			expected, err := repo.Resolve("dev")
			if err != nil {
				return err
			}
			res, err := repo.Merge("dev-next", "dev", git.MergeOptions{Message: "Promote dev-next into dev\n"})
			if err != nil {
				return err
			}
			// Opened afresh: a go-git store does not see packs another store wrote after it
			// listed them, and the fetch above wrote one.
			raw, err := gogit.PlainOpen(dir)
			if err != nil {
				return err
			}
			return raw.PushContext(ctx, &gogit.PushOptions{
				RemoteName:        "origin",
				RefSpecs:          []config.RefSpec{config.RefSpec(res.SHA + ":refs/heads/dev")},
				RequireRemoteRefs: []config.RefSpec{config.RefSpec(expected + ":refs/heads/dev")},
			})
		}
	}
}

func openBench(b *testing.B, url string) *git.Repository {
	return openBenchIn(b, benchDir(b, "go-git-client"), url)
}

// openBenchIn opens a cache in root and fetches the whole history once, outside the timer.
func openBenchIn(b *testing.B, root, url string) *git.Repository {
	cache, err := git.NewCache(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	repo, err := cache.Open(url, git.Auth{}, git.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := repo.Fetch(context.Background(), "dev", "dev-next"); err != nil {
		b.Fatal(err)
	}
	return repo
}

var cliRefspecs = []string{
	"+refs/heads/dev:refs/remotes/origin/dev",
	"+refs/heads/dev-next:refs/remotes/origin/dev-next",
	"+" + git.DefaultNotesRef + ":refs/remotes/origin-refs/notes/hydrator.metadata",
}

func cliRunner(gitBin, dir string) func(args ...string) (string, error) {
	home := filepath.Dir(dir)
	return func(args ...string) (string, error) {
		cmd := exec.Command(gitBin, args...)
		if args[0] != "init" {
			cmd.Args = append([]string{gitBin, "--git-dir", dir}, args...)
		}
		cmd.Env = append(os.Environ(),
			"HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
			"GIT_AUTHOR_NAME=Sluice", "GIT_AUTHOR_EMAIL=sluice@noreply.sluice.dev",
			"GIT_COMMITTER_NAME=Sluice", "GIT_COMMITTER_EMAIL=sluice@noreply.sluice.dev")
		out, err := cmd.Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return "", fmt.Errorf("git %s: %w: %s", args[0], err, exit.Stderr)
			}
			return "", err
		}
		return strings.TrimSpace(string(out)), nil
	}
}

// cliCycle is the promotion done with the git CLI, step for step what MergeAndPush does.
func cliCycle(run func(args ...string) (string, error)) error {
	if _, err := run(append([]string{"fetch", "--quiet", "--no-tags", "origin"}, cliRefspecs...)...); err != nil {
		return err
	}
	target, err := run("rev-parse", "refs/remotes/origin/dev")
	if err != nil {
		return err
	}
	source, err := run("rev-parse", "refs/remotes/origin/dev-next")
	if err != nil {
		return err
	}
	for _, pair := range [][2]string{{source, target}, {target, source}} {
		// Exit status 1 means "not an ancestor"; anything else is a failure.
		_, err := run("merge-base", "--is-ancestor", pair[0], pair[1])
		var exit *exec.ExitError
		if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 1 {
			return fmt.Errorf("expected dev and dev-next to have diverged: %v", err)
		}
	}
	merge, err := run("commit-tree", source+"^{tree}", "-p", target, "-p", source, "-m", "Promote dev-next into dev")
	if err != nil {
		return err
	}
	_, err = run("push", "--quiet", "--force-with-lease=refs/heads/dev:"+target, "origin", merge+":refs/heads/dev")
	return err
}

// BenchmarkFirstFetch measures the first fetch of dev and dev-next (and the notes) of the
// generated repository into an empty cache: what a promoter pays once per repository, on its
// first start. The git CLI fetching the same refs into an empty bare repository is the
// baseline, in the same run.
func BenchmarkFirstFetch(b *testing.B) {
	var cliNsPerOp float64
	_, url := serve(b, "first-fetch")
	b.Run("git-cli", func(b *testing.B) {
		gitBin, err := exec.LookPath("git")
		if err != nil {
			b.Skip("git is not on PATH")
		}
		for i := range b.N {
			dir := filepath.Join(benchDir(b, fmt.Sprint("first-fetch-cli-", i)), "cache.git")
			run := cliRunner(gitBin, dir)
			for _, args := range [][]string{{"init", "--quiet", "--bare", dir}, {"remote", "add", "origin", url}, append([]string{"fetch", "--quiet", "--no-tags", "origin"}, cliRefspecs...)} {
				if _, err := run(args...); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = os.RemoveAll(filepath.Dir(dir))
			b.StartTimer()
		}
		cliNsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("go-git", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			root := benchDir(b, fmt.Sprint("first-fetch-go-git-", i))
			openBenchIn(b, root, url)
			b.StopTimer()
			_ = os.RemoveAll(root)
			b.StartTimer()
		}
		if cliNsPerOp > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/cliNsPerOp, "x-cli")
		}
	})
}
