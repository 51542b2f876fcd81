package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

// fleetEnvs are the environments of every strategy of the fleet benchmarks.
var fleetEnvs = []string{"dev", "staging", "prod"}

// gitCalls counts what one served repository was asked: ref advertisements for fetches (each
// fetch, and each poll, starts with one), upload-pack requests (a fetch that wanted objects),
// and pushes.
type gitCalls struct {
	Adverts, Uploads, Pushes int64
	// Bytes is what upload-pack sent: a full clone shows here, an up-to-date fetch does not.
	Bytes int64
}

func (c gitCalls) minus(d gitCalls) gitCalls {
	return gitCalls{c.Adverts - d.Adverts, c.Uploads - d.Uploads, c.Pushes - d.Pushes, c.Bytes - d.Bytes}
}

// fleetServer serves every repository under root with git http-backend (the server side costs
// what it costs on a real git host), counting each request per repository.
type fleetServer struct {
	root string
	http *httptest.Server

	mu    sync.Mutex
	calls map[string]*gitCalls
}

func newFleetServer(tb testing.TB) *fleetServer {
	tb.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		tb.Skip("the fleet benchmarks serve with git http-backend: git is not on PATH")
	}
	s := &fleetServer{root: tb.TempDir(), calls: map[string]*gitCalls{}}
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"}, Env: []string{
		"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=fleet",
		"GIT_CONFIG_NOSYSTEM=1", "HOME=" + s.root,
	}}
	s.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, action, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ".git/")
		cw := &countingWriter{ResponseWriter: w}
		backend.ServeHTTP(cw, r)
		s.count(name, action, r.URL.Query().Get("service"), cw.n)
	}))
	tb.Cleanup(s.http.Close)
	return s
}

func (s *fleetServer) count(name, action, service string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[name]
	if c == nil {
		c = &gitCalls{}
		s.calls[name] = c
	}
	switch {
	case action == "info/refs" && service == "git-upload-pack":
		c.Adverts++
	case action == "git-upload-pack":
		c.Uploads++
		c.Bytes += n
	case action == "git-receive-pack":
		c.Pushes++
	}
}

// snapshot copies the counts of every repository.
func (s *fleetServer) snapshot() map[string]gitCalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]gitCalls, len(s.calls))
	for k, v := range s.calls {
		out[k] = *v
	}
	return out
}

// callsSince sums, over repos, what each was asked since before, and the largest per repository.
func (s *fleetServer) callsSince(before map[string]gitCalls, repos []string) (sum, most gitCalls) {
	now := s.snapshot()
	for _, r := range repos {
		d := now[r].minus(before[r])
		sum = gitCalls{sum.Adverts + d.Adverts, sum.Uploads + d.Uploads, sum.Pushes + d.Pushes, sum.Bytes + d.Bytes}
		most = gitCalls{max(most.Adverts, d.Adverts), max(most.Uploads, d.Uploads), max(most.Pushes, d.Pushes), max(most.Bytes, d.Bytes)}
	}
	return sum, most
}

func (s *fleetServer) url(name string) string { return s.http.URL + "/" + name + ".git" }

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// fleetTemplate is a bare repository holding the objects of a whole wave, with its refs as they
// are before the wave: dev, staging and prod hydrated from dry commit D0, no proposed branches.
// The wave itself is only ref writes (Wave), so it lands in every repository at once.
type fleetTemplate struct {
	Dir    string
	D0, D1 string
	// Wave is each ref's value once the hydrator has rendered D1 onto every <env>-next.
	Wave map[string]string
}

func buildFleetTemplate(tb testing.TB) *fleetTemplate {
	tb.Helper()
	t := &fleetTemplate{Dir: filepath.Join(tb.TempDir(), "template.git"), Wave: map[string]string{}}
	if _, err := gogit.PlainInit(t.Dir, true); err != nil {
		tb.Fatal(err)
	}
	repo := gittest.OpenBare(t.Dir)
	t.D0 = repo.CommitFiles(tb, "main", map[string]string{"values.yaml": "v: 0\n"}, "initial")
	for _, e := range fleetEnvs {
		repo.CommitFiles(tb, e, map[string]string{"hydrator.metadata": string(hydratorNote(t.D0)), "manifest.yaml": "env: " + e + "\n"}, "initial "+e)
	}
	t.D1 = repo.CommitFiles(tb, "main", map[string]string{"values.yaml": "v: 1\n"}, "change")
	for _, e := range fleetEnvs {
		repo.SetBranch(tb, e+"-next", repo.Branch(tb, e))
		sha := repo.CommitFiles(tb, e+"-next", map[string]string{"manifest.yaml": "env: " + e + "\nv: 1\n"}, "hydrate "+t.D1[:7])
		repo.AddNote(tb, git.DefaultNotesRef, sha, string(hydratorNote(t.D1)))
		t.Wave["refs/heads/"+e+"-next"] = sha
	}
	t.Wave["refs/heads/main"] = t.D1
	t.Wave[git.DefaultNotesRef] = repo.Ref(tb, git.DefaultNotesRef)
	if _, err := os.Stat(filepath.Join(t.Dir, "packed-refs")); err == nil {
		tb.Fatal("the template has packed refs: the wave writes loose refs only")
	}
	before := map[string]string{"refs/heads/main": t.D0}
	for ref := range t.Wave {
		if ref != "refs/heads/main" {
			before[ref] = ""
		}
	}
	if err := writeRefs(t.Dir, before); err != nil {
		tb.Fatal(err)
	}
	return t
}

// writeRefs sets each loose ref of the bare repository dir ("" deletes it), each by rename, so a
// server reading it meanwhile sees the old or the new value.
func writeRefs(dir string, refs map[string]string) error {
	for ref, sha := range refs {
		path := filepath.Join(dir, filepath.FromSlash(ref))
		if sha == "" {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path+".lock", []byte(sha+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".lock", path); err != nil {
			return err
		}
	}
	return nil
}

// serveCopies serves n copies of the template, named prefix-0 ... prefix-(n-1).
func (s *fleetServer) serveCopies(tb testing.TB, t *fleetTemplate, prefix string, n int) []string {
	tb.Helper()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		if err := os.CopyFS(filepath.Join(s.root, names[i]+".git"), os.DirFS(t.Dir)); err != nil {
			tb.Fatal(err)
		}
	}
	return names
}

// startWave writes the wave's refs into every named repository.
func (s *fleetServer) startWave(t *fleetTemplate, names []string) error {
	for _, n := range names {
		if err := writeRefs(filepath.Join(s.root, n+".git"), t.Wave); err != nil {
			return err
		}
	}
	return nil
}

// cliFleet is the baseline: one process doing, with the git CLI, repository after repository,
// the merges and pushes the promoter makes: fetch <env> and <env>-next, fast-forward when
// <env>-next contains <env>, else merge-tree and commit-tree, and a compare-and-swap push.
type cliFleet struct {
	runs []func(args ...string) (string, error)
}

// newCLIFleet clones every repository into a bare cache of its own (untimed, as the promoter's
// cache is warm before a wave).
func newCLIFleet(tb testing.TB, s *fleetServer, names []string) *cliFleet {
	tb.Helper()
	gitBin, _ := exec.LookPath("git")
	root := tb.TempDir()
	c := &cliFleet{}
	for _, n := range names {
		dir := filepath.Join(root, n+".git")
		run := cliRun(gitBin, dir)
		// No notes yet: the hydrator writes the first with the wave.
		clone := append([]string{"fetch", "--quiet", "--no-tags", "origin"}, branchRefspecs(fleetEnvs...)...)
		for _, args := range [][]string{{"init", "--quiet", "--bare", dir}, {"remote", "add", "origin", s.url(n)}, clone} {
			if _, err := run(args...); err != nil {
				tb.Fatal(err)
			}
		}
		c.runs = append(c.runs, run)
	}
	return c
}

// fetchArgs fetch branches and the notes, as the promoter does.
func fetchArgs(branches ...string) []string {
	args := []string{"fetch", "--quiet", "--no-tags", "origin", "+" + git.DefaultNotesRef + ":refs/remotes/origin-refs/notes/hydrator.metadata"}
	return append(args, branchRefspecs(branches...)...)
}

func branchRefspecs(branches ...string) []string {
	var out []string
	for _, b := range branches {
		out = append(out, "+refs/heads/"+b+":refs/remotes/origin/"+b)
	}
	return out
}

// promote merges <env>-next into env in every repository, one after another.
func (c *cliFleet) promote(env string) error {
	for _, run := range c.runs {
		if err := cliPromote(run, env); err != nil {
			return err
		}
	}
	return nil
}

func cliPromote(run func(args ...string) (string, error), env string) error {
	if _, err := run(fetchArgs(env, env+"-next")...); err != nil {
		return err
	}
	target, err := run("rev-parse", "refs/remotes/origin/"+env)
	if err != nil {
		return err
	}
	source, err := run("rev-parse", "refs/remotes/origin/"+env+"-next")
	if err != nil {
		return err
	}
	merged := source
	if _, err := run("merge-base", "--is-ancestor", target, source); err != nil {
		tree, err := run("merge-tree", "--write-tree", target, source)
		if err != nil {
			return err
		}
		if merged, err = run("commit-tree", tree, "-p", target, "-p", source, "-m", "Merge "+env+"-next into "+env); err != nil {
			return err
		}
	}
	_, err = run("push", "--quiet", "--force-with-lease=refs/heads/"+env+":"+target, "origin", merged+":refs/heads/"+env)
	return err
}

func cliRun(gitBin, dir string) func(args ...string) (string, error) {
	home := filepath.Dir(dir)
	return func(args ...string) (string, error) {
		cmd := exec.Command(gitBin, args...)
		if args[0] != "init" {
			cmd.Args = append([]string{gitBin, "--git-dir", dir}, args...)
		}
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
			"GIT_AUTHOR_NAME=Sluice", "GIT_AUTHOR_EMAIL=sluice@noreply.sluice.dev",
			"GIT_COMMITTER_NAME=Sluice", "GIT_COMMITTER_EMAIL=sluice@noreply.sluice.dev")
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("git %s: %w: %s", args[0], err, exit.Stderr)
		}
		return strings.TrimSpace(string(out)), err
	}
}

// procStatus reads one field, in KiB, of /proc/<pid>/status (VmRSS, VmHWM).
func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// rssSampler records the largest VmRSS of the processes pids while it runs.
type rssSampler struct {
	stop chan struct{}
	done chan struct{}
	peak []atomic.Int64
}

func sampleRSS(pids ...int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{}), peak: make([]atomic.Int64, len(pids))}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for i, pid := range pids {
				if v, err := procStatus(pid, "VmRSS"); err == nil && v > s.peak[i].Load() {
					s.peak[i].Store(v)
				}
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the peak RSS of each process, in MiB.
func (s *rssSampler) Stop() []float64 {
	close(s.stop)
	<-s.done
	out := make([]float64, len(s.peak))
	for i := range s.peak {
		out[i] = float64(s.peak[i].Load()) / 1024
	}
	return out
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// waitFor polls cond every 250 ms until it holds, for at most timeout.
func waitFor(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	return waitEvery(ctx, timeout, 250*time.Millisecond, cond)
}

// waitEvery is waitFor checking every interval.
func waitEvery(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
