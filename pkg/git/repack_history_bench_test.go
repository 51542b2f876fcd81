package git_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

// longHistoryPacks is how many packs the long-history cache holds before its repack: one more
// than DefaultMaxPacks, so the next fetch repacks, as it does in a promoter's cache.
const longHistoryPacks = git.DefaultMaxPacks + 1

// longHistory is a cache of the generated repository (historyLength commits), fetched once and
// then once for each of longHistoryPacks-1 new commits, maintenance off; built once per run.
var longHistory struct {
	once sync.Once
	root string
	url  string
}

func longHistoryCache(b *testing.B) (root, url string) {
	longHistory.once.Do(func() {
		remote, url := serve(b, "long-history-remote")
		root := benchDir(b, "long-history-cache")
		c, err := git.NewCache(root, quiet, git.WithMaintenance(git.Maintenance{Disabled: true}))
		if err != nil {
			b.Fatal(err)
		}
		repo, err := c.Open(url, git.Auth{}, git.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := repo.Fetch(ctx, "dev", "dev-next"); err != nil {
			b.Fatal(err)
		}
		for range longHistoryPacks - 1 {
			gittest.GenerateHistory(b, remote.Dir, "dev-next", 1)
			if err := repo.Fetch(ctx, "dev", "dev-next"); err != nil {
				b.Fatal(err)
			}
		}
		longHistory.root, longHistory.url = root, url
	})
	if longHistory.root == "" {
		b.Fatal("the long-history cache could not be built")
	}
	if packs := packsIn(b, longHistory.root); packs != longHistoryPacks {
		b.Fatalf("the long-history cache holds %d packs, want %d", packs, longHistoryPacks)
	}
	return longHistory.root, longHistory.url
}

// copyOf copies the long-history cache to a new folder named name.
func copyOf(b *testing.B, name string) string {
	src, _ := longHistoryCache(b)
	return copyDir(b, src, name)
}

// copyDir copies src to a new bench folder named name, emptied first.
func copyDir(b *testing.B, src, name string) string {
	root := benchDir(b, name)
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	return root
}

// BenchmarkRepackLongHistory measures the repack of a cache of the generated repository (20,000
// commits, or SLUICE_BENCH_COMMITS) once it holds 33 packs, as a promoter's cache comes to: the
// fetch that finds too many packs and repacks. By default the history's large pack is kept and
// the 32 small ones are rolled into one (Maintenance.LargePackObjects); the baseline, in the same
// run, is git's own geometric repack (`git repack --geometric=2 -d`) of a copy of the same cache.
// The full repack, every object a ref reaches into one pack, stands beside `git repack -a -d`.
// Each reports its peak RSS (git's from its rusage, the promoter's side from VmHWM, reset just
// before) and the objects its packs hold.
func BenchmarkRepackLongHistory(b *testing.B) {
	for _, mode := range []repackMode{
		{"roll-up", []string{"--geometric=2", "-d"}, git.Maintenance{}},
		{"full", []string{"-a", "-d"}, git.Maintenance{LargePackObjects: math.MaxInt32}},
	} {
		var base repackBaseline
		b.Run("git-cli-repack-"+mode.name, benchCLIRepack(mode, &base))
		b.Run("sluice-fetch-and-repack-"+mode.name, benchSluiceRepack(mode, &base))
	}
}

// repackMode is a repack as git's arguments and as this package's maintenance.
type repackMode struct {
	name    string
	gitArgs []string
	m       git.Maintenance
}

// repackBaseline is what git's repack took and kept, for the figures beside it.
type repackBaseline struct {
	nsPerOp float64
	objects int
}

// benchCLIRepack times git repack on a copy of the long history, and records it in base.
func benchCLIRepack(mode repackMode, base *repackBaseline) func(*testing.B) {
	return func(b *testing.B) {
		gitBin, err := exec.LookPath("git")
		if err != nil {
			b.Skip("git is not on PATH")
		}
		var peakKiB int64
		for i := range b.N {
			b.StopTimer()
			dir := onlyRepository(b, copyOf(b, fmt.Sprint("long-history-cli-", mode.name, i)))
			b.StartTimer()
			cmd := exec.Command(gitBin, append([]string{"--git-dir", dir, "repack", "-q"}, mode.gitArgs...)...)
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Dir(dir))
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git repack: %v: %s", err, out)
			}
			b.StopTimer()
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				peakKiB = max(peakKiB, ru.Maxrss)
			}
			base.objects = packedObjects(b, gitBin, dir)
			b.StartTimer()
		}
		base.nsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(base.objects), "objects")
	}
}

// benchSluiceRepack times a fetch that repacks a copy of the long history, beside base.
func benchSluiceRepack(mode repackMode, base *repackBaseline) func(*testing.B) {
	return func(b *testing.B) {
		_, url := longHistoryCache(b)
		b.ReportAllocs()
		var peakKiB, restKiB int64
		var objects, packs int
		for i := range b.N {
			b.StopTimer()
			root := copyOf(b, fmt.Sprint("long-history-sluice-", mode.name, i))
			c, err := git.NewCache(root, quiet, git.WithMaintenance(mode.m))
			if err != nil {
				b.Fatal(err)
			}
			repo, err := c.Open(url, git.Auth{}, git.Options{})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			debug.FreeOSMemory()
			resetPeakRSS(b)
			restKiB = max(restKiB, procStatusKiB(b, "VmRSS"))
			b.StartTimer()
			if err := repo.Fetch(context.Background(), "dev", "dev-next"); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			peakKiB = max(peakKiB, procStatusKiB(b, "VmHWM"))
			if packs = packsIn(b, root); packs >= longHistoryPacks {
				b.Fatalf("%d packs after the repack", packs)
			}
			if gitBin, err := exec.LookPath("git"); err == nil {
				objects = packedObjects(b, gitBin, onlyRepository(b, root))
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(peakKiB-restKiB)/1024, "RSS-growth-MiB")
		b.ReportMetric(float64(packs), "packs")
		if objects > 0 {
			b.ReportMetric(float64(objects), "objects")
			if mode.name == "full" && base.objects > 0 && objects != base.objects {
				b.Fatalf("the repack kept %d objects, git's %d", objects, base.objects)
			}
		}
		if base.nsPerOp > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base.nsPerOp, "x-cli")
		}
	}
}

// onlyRepository is the one repository folder in a cache root.
func onlyRepository(b *testing.B, root string) string {
	packs, err := filepath.Glob(filepath.Join(root, "*", "objects", "pack"))
	if err != nil || len(packs) != 1 {
		b.Fatalf("want one repository in %s, found %d (%v)", root, len(packs), err)
	}
	return filepath.Dir(filepath.Dir(packs[0]))
}

func packsIn(b *testing.B, root string) int {
	packs, err := filepath.Glob(filepath.Join(root, "*", "objects", "pack", "pack-*.pack"))
	if err != nil {
		b.Fatal(err)
	}
	return len(packs)
}

// packedObjects is git's count of the objects in dir's packs.
func packedObjects(b *testing.B, gitBin, dir string) int {
	out, err := exec.Command(gitBin, "--git-dir", dir, "count-objects", "-v").Output()
	if err != nil {
		b.Fatalf("git count-objects: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "in-pack: "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("git count-objects printed no in-pack count: %s", out)
	return 0
}

// resetPeakRSS starts VmHWM again from the process's RSS now (Linux: clear_refs 5).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS on this system: %v", err)
	}
}

// procStatusKiB is a "kB" field of /proc/self/status.
func procStatusKiB(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
