package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// benchSize is the integer in environment variable name, or def when it is unset.
func benchSize(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q is not a positive integer", name, v)
	}
	return n
}

// fleetClient is a client for the benchmark's own writes, not throttled to client-go's 5 QPS.
func fleetClient(b *testing.B) sluice.Interface {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := sluice.NewForConfig(cfg)
	must(b, err)
	return c
}

// BenchmarkFleet runs N PromotionStrategies (SLUICE_BENCH_STRATEGIES), each on a repository of
// its own with dev, staging and prod, served by git http-backend, on one promoter process, and
// with SLUICE_BENCH_SHARDS=2 on two processes sharded by label too. A wave is a new dry commit hydrated into every
// repository at once (each <env>-next and the notes ref move), announced by each strategy's
// refresh annotation, as a plain git hydrator's CI does. It reports, for each run:
//   - startup (first start, every repository cloned) and restart (same cache) time, until every
//     strategy reports; and the git calls each took, counted at the server;
//   - RSS (VmRSS from /proc) at rest and its peak during the wave, per process;
//   - the wave: until every dev environment is merged (wave-dev-s), and until every prod is;
//   - git calls per repository during the wave, and while idle afterwards;
//   - the git cache on disk per repository.
//
// The baseline, in the same run, is one process looping over the same repositories with the
// git CLI, doing the same merges and pushes (git-cli-loop): x-cli is the wave over that loop.
//
// Sizes (the defaults keep make bench short; see docs/benchmarks.md):
//   - SLUICE_BENCH_STRATEGIES (default 20): the number of strategies and repositories;
//   - SLUICE_BENCH_IDLE_SECONDS (default 10): how long idle polls are counted;
//   - SLUICE_BENCH_SHARDS (default 1): 2 adds the run on two processes sharded by label;
//   - SLUICE_BENCH_HEAP_PROFILES: a folder for each promoter's heap profile (bench_heap_test.go);
//   - SLUICE_BENCH_PROMOTER_ARGS: promoter flags, one run per ";"-separated variant in the same
//     run, such as "--workers=2;--workers=4" (a before/after of a flag under the same load).
func BenchmarkFleet(b *testing.B) {
	testenv.SkipIfShort(b)
	n := benchSize(b, "SLUICE_BENCH_STRATEGIES", 20)
	srv := newFleetServer(b)
	tmpl := buildFleetTemplate(b)
	bin := promoterBin(b)
	var cliDev, cliAll time.Duration
	b.Run(fmt.Sprintf("baseline-git-cli-loop-%d", n), func(b *testing.B) {
		names := srv.serveCopies(b, tmpl, fmt.Sprintf("cli%d", b.N), n)
		cli := newCLIFleet(b, srv, names)
		must(b, srv.startWave(tmpl, names))
		b.ResetTimer()
		start := time.Now()
		for i, e := range fleetEnvs {
			must(b, cli.promote(e))
			if i == 0 {
				cliDev = time.Since(start)
			}
		}
		cliAll = time.Since(start)
		b.ReportMetric(cliDev.Seconds(), "wave-dev-s")
		b.ReportMetric(cliAll.Seconds(), "wave-all-s")
	})
	shardCounts := []int{1}
	if benchSize(b, "SLUICE_BENCH_SHARDS", 1) >= 2 {
		shardCounts = append(shardCounts, 2)
	}
	for _, shards := range shardCounts {
		for _, args := range promoterArgs() {
			name := fmt.Sprintf("promoter-%d-strategies-%d-shards", n, shards)
			if len(args) > 0 {
				name += "-" + strings.Join(args, "-")
			}
			b.Run(name, func(b *testing.B) {
				fl := newFleet(b, srv, tmpl, bin, n, shards, b.N)
				fl.args = args
				fl.run(b, cliDev, cliAll)
			})
		}
	}
}

// promoterArgs are the flag variants of SLUICE_BENCH_PROMOTER_ARGS, one run each; one run with
// no extra flags when it is unset.
func promoterArgs() [][]string {
	v := os.Getenv("SLUICE_BENCH_PROMOTER_ARGS")
	if v == "" {
		return [][]string{nil}
	}
	var out [][]string
	for _, variant := range strings.Split(v, ";") {
		out = append(out, strings.Fields(variant))
	}
	return out
}

// promoterBin is the promoter binary the fleet benchmarks run: this tree's, or
// SLUICE_BENCH_PROMOTER_BIN (another build, an earlier commit's, for a before/after).
func promoterBin(b *testing.B) string {
	if bin := os.Getenv("SLUICE_BENCH_PROMOTER_BIN"); bin != "" {
		return bin
	}
	return buildController(b)
}

// fleet is one run: a namespace of n strategies and the promoter processes serving them.
type fleet struct {
	srv    *fleetServer
	tmpl   *fleetTemplate
	client sluice.Interface
	bin    string
	ns     string
	names  []string
	shards []*shard
	ctx    context.Context
	// args are extra flags for every promoter process.
	args []string
}

// shard is one promoter process, its label value and its git cache.
type shard struct {
	label, cache, log string
	// metrics is the address of the process's /metrics, read for its API calls.
	metrics string
	// profiler is the address of its /debug/pprof, with SLUICE_BENCH_HEAP_PROFILES only.
	profiler string
	cmd      *exec.Cmd
}

func newFleet(b *testing.B, srv *fleetServer, tmpl *fleetTemplate, bin string, n, shards, iter int) *fleet {
	b.Helper()
	f := &fleet{srv: srv, tmpl: tmpl, bin: bin, client: fleetClient(b), ctx: context.Background(),
		ns: fmt.Sprintf("fleet-%d", time.Now().UnixNano())}
	f.names = srv.serveCopies(b, tmpl, fmt.Sprintf("s%d-%d-%d", shards, iter, time.Now().UnixNano()%100000), n)
	must(b, createNamespace(f.ctx, f.ns))
	_, err := f.client.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"},
		Spec:       scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
	}, metav1.CreateOptions{})
	must(b, err)
	for s := range shards {
		f.shards = append(f.shards, &shard{label: fmt.Sprint("s", s), cache: b.TempDir(), log: filepath.Join(b.TempDir(), "controller.log"),
			metrics: freeMetricsAddr(b)})
		if heapProfileDir() != "" {
			f.shards[s].profiler = freeMetricsAddr(b)
		}
	}
	must(b, f.parallel(func(i int, name string) error {
		_, err := f.client.ScmV1alpha1().ScmRepositories(f.ns).Create(f.ctx, &scmv1alpha1.ScmRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: scmv1alpha1.ScmRepositorySpec{URL: srv.url(name), AllowInsecureLoopbackHTTP: true,
				ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: name},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		spec := promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: name}, DryBranch: "main"}
		for _, e := range fleetEnvs {
			spec.Environments = append(spec.Environments, promoterv1alpha1.Environment{Branch: e})
		}
		_, err = f.client.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, &promoterv1alpha1.PromotionStrategy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"sluice.dev/shard": f.shards[i%shards].label}},
			Spec:       spec,
		}, metav1.CreateOptions{})
		return err
	}))
	return f
}

// parallel calls do for every repository, 16 at a time, and returns the first error.
func (f *fleet) parallel(do func(i int, name string) error) error {
	return inParallel(f.names, 16, do)
}

// inParallel calls do for every name, width at a time, and returns the first error.
func inParallel(names []string, width int, do func(i int, name string) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	sem := make(chan struct{}, width)
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := do(i, name); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (f *fleet) start(b *testing.B) {
	b.Helper()
	for _, s := range f.shards {
		log := openLog(b, s.log)
		var extra []string
		if len(f.shards) > 1 {
			extra = []string{"--watch-label-selector", "sluice.dev/shard=" + s.label}
		}
		extra = append(extra, "--metrics-bind-address", s.metrics)
		if s.profiler != "" {
			extra = append(extra, "--profiler-bind-address", s.profiler)
		}
		s.cmd = runControllerProcess(b, f.bin, f.ns, s.cache, log, append(extra, f.args...)...)
	}
}

// openLog opens path for appending a process's output, closed when the benchmark ends.
func openLog(b *testing.B, path string) *os.File {
	log, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	must(b, err)
	b.Cleanup(func() { _ = log.Close() })
	return log
}

func (f *fleet) stop() {
	for _, s := range f.shards {
		_ = s.cmd.Process.Signal(os.Interrupt)
		_ = s.cmd.Wait()
	}
}

func (f *fleet) pids() []int {
	out := make([]int, len(f.shards))
	for i, s := range f.shards {
		out[i] = s.cmd.Process.Pid
	}
	return out
}

// waitAll waits until every strategy satisfies cond.
func (f *fleet) waitAll(b *testing.B, timeout time.Duration, cond func(*promoterv1alpha1.PromotionStrategy) bool) {
	b.Helper()
	left := 0
	// Each check lists every strategy: at 1,000 strategies a list is megabytes the API server
	// encodes on the same 2 cores the promoter runs on, so the checks are spaced out with size,
	// and never more than once a second (the loops they are compared with list nothing).
	interval := max(time.Second, time.Duration(len(f.names))*2*time.Millisecond)
	err := waitEvery(f.ctx, timeout, interval, func(ctx context.Context) (bool, error) {
		list, err := f.client.PromoterV1alpha1().PromotionStrategies(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		left = len(f.names) - len(list.Items)
		for i := range list.Items {
			if !cond(&list.Items[i]) {
				left++
			}
		}
		return left == 0, nil
	})
	if err != nil {
		b.Fatalf("%d of %d strategies not there after %s: %v (logs in %s)", left, len(f.names), timeout, err, f.shards[0].log)
	}
}

func envOn(branch, dry string) func(*promoterv1alpha1.PromotionStrategy) bool {
	return func(ps *promoterv1alpha1.PromotionStrategy) bool {
		for _, e := range ps.Status.Environments {
			if e.Branch == branch {
				return e.Active.DrySHA == dry
			}
		}
		return false
	}
}

func refreshed(value string) func(*promoterv1alpha1.PromotionStrategy) bool {
	return func(ps *promoterv1alpha1.PromotionStrategy) bool { return ps.Status.LastHandledRefresh == value }
}

// refreshAll sets every strategy's refresh annotation to value.
func (f *fleet) refreshAll(value string) error {
	return f.parallel(func(_ int, name string) error {
		_, err := testenv.Update(f.ctx, f.client.PromoterV1alpha1().PromotionStrategies(f.ns), name, func(ps *promoterv1alpha1.PromotionStrategy) {
			metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, value)
		})
		return err
	})
}

// perRepo reports calls divided by the number of repositories, under names prefix-adverts and so on.
func (f *fleet) perRepo(b *testing.B, prefix string, sum, most gitCalls) {
	n := float64(len(f.names))
	b.ReportMetric(float64(sum.Adverts)/n, prefix+"-fetches/repo")
	b.ReportMetric(float64(sum.Uploads)/n, prefix+"-uploads/repo")
	b.ReportMetric(float64(sum.Pushes)/n, prefix+"-pushes/repo")
	b.ReportMetric(float64(sum.Bytes)/n/1024, prefix+"-KiB-sent/repo")
	b.Logf("%s: per repository on average %.2f fetches (ref advertisements), %.2f upload-packs, %.2f pushes, %.1f KiB sent; at most %d, %d, %d",
		prefix, float64(sum.Adverts)/n, float64(sum.Uploads)/n, float64(sum.Pushes)/n, float64(sum.Bytes)/n/1024, most.Adverts, most.Uploads, most.Pushes)
}

// apiCalls adds up what every promoter process reports of its Kubernetes API calls so far.
func (f *fleet) apiCalls(b *testing.B) apiCalls {
	sum := apiCalls{ByMethod: map[string]float64{}}
	for _, s := range f.shards {
		c, err := scrapeAPICalls(s.metrics)
		must(b, err)
		for m, v := range c.ByMethod {
			sum.ByMethod[m] += v
		}
		sum.Conflicts += c.Conflicts
		sum.RateLimitWait += c.RateLimitWait
	}
	return sum
}

// perPromotion reports Kubernetes API calls per promotion (one per environment per strategy),
// and the time they waited for the client-side rate limiter.
func (f *fleet) perPromotion(b *testing.B, prefix string, c apiCalls) {
	promotions := float64(len(f.names) * len(fleetEnvs))
	total := c.total()
	b.ReportMetric(total/promotions, prefix+"-api-calls/promotion")
	b.ReportMetric(c.ByMethod["GET"]/promotions, prefix+"-api-gets/promotion")
	b.ReportMetric(c.Conflicts/promotions, prefix+"-api-conflicts/promotion")
	b.ReportMetric(c.RateLimitWait, prefix+"-ratelimit-wait-s")
	b.Logf("%s: %.0f Kubernetes API calls (%.1f per promotion) by method %v, %.0f conflicts; %.1f s waited for the client rate limiter in all",
		prefix, total, total/promotions, c.ByMethod, c.Conflicts, c.RateLimitWait)
}

func (f *fleet) rss(b *testing.B, name string, mib []float64) {
	for i, v := range mib {
		b.ReportMetric(v, fmt.Sprintf("%s-rss-MiB-shard%d", name, i))
	}
}

func (f *fleet) run(b *testing.B, cliDev, cliAll time.Duration) {
	b.StopTimer()
	mark := f.srv.snapshot()
	start := time.Now()
	f.start(b)
	f.waitAll(b, 20*time.Minute, envOn("prod", f.tmpl.D0))
	b.ReportMetric(time.Since(start).Seconds(), "startup-s")
	sum, most := f.srv.callsSince(mark, f.names)
	f.perRepo(b, "startup", sum, most)
	time.Sleep(5 * time.Second)
	f.rss(b, "rest", (&rssSampler{}).now(f.pids()))
	f.saveHeapProfiles(b, "rest")

	mark = f.srv.snapshot()
	apiMark, serverMark := f.apiCalls(b), scrapeServerRequests(b)
	sampler := sampleRSS(f.pids()...)
	b.StartTimer()
	start = time.Now()
	must(b, f.srv.startWave(f.tmpl, f.names))
	must(b, f.refreshAll("wave"))
	f.waitAll(b, 30*time.Minute, envOn("dev", f.tmpl.D1))
	dev := time.Since(start)
	b.StopTimer()
	f.waitAll(b, 30*time.Minute, envOn("prod", f.tmpl.D1))
	all := time.Since(start)
	f.rss(b, "wave-peak", sampler.Stop())
	b.ReportMetric(dev.Seconds(), "wave-dev-s")
	b.ReportMetric(all.Seconds(), "wave-all-s")
	if cliDev > 0 {
		b.ReportMetric(dev.Seconds()/cliDev.Seconds(), "x-cli-dev")
		b.ReportMetric(all.Seconds()/cliAll.Seconds(), "x-cli-all")
	}
	sum, most = f.srv.callsSince(mark, f.names)
	f.perRepo(b, "wave", sum, most)
	f.perPromotion(b, "wave", f.apiCalls(b).minus(apiMark))
	scrapeServerRequests(b).logSince(b, serverMark, len(f.names)*len(fleetEnvs))

	idle := time.Duration(benchSize(b, "SLUICE_BENCH_IDLE_SECONDS", 10)) * time.Second
	time.Sleep(5 * time.Second) // the wave's last status writes come back as events
	mark = f.srv.snapshot()
	time.Sleep(idle)
	sum, _ = f.srv.callsSince(mark, f.names)
	b.ReportMetric(float64(sum.Adverts)/float64(len(f.names))/idle.Minutes(), "idle-fetches/repo/min")
	f.rss(b, "idle", (&rssSampler{}).now(f.pids()))
	f.saveHeapProfiles(b, "after-wave")
	var disk int64
	for _, s := range f.shards {
		disk += dirSize(s.cache)
	}
	b.ReportMetric(float64(disk)/float64(len(f.names))/1024, "cache-KiB/repo")
	if len(f.shards) == 1 {
		f.restart(b)
	}
	f.stop()
}

// restart stops the promoter, asks every strategy for a refresh while it is down, and times the
// new process (same git cache) until every strategy has handled it.
func (f *fleet) restart(b *testing.B) {
	f.stop()
	must(b, f.refreshAll("restart"))
	mark := f.srv.snapshot()
	start := time.Now()
	f.start(b)
	f.waitAll(b, 20*time.Minute, refreshed("restart"))
	b.ReportMetric(time.Since(start).Seconds(), "restart-s")
	sum, most := f.srv.callsSince(mark, f.names)
	f.perRepo(b, "restart", sum, most)
}

// now reads the VmRSS of each process once, in MiB.
func (*rssSampler) now(pids []int) []float64 {
	out := make([]float64, len(pids))
	for i, pid := range pids {
		if v, err := procStatus(pid, "VmRSS"); err == nil {
			out[i] = float64(v) / 1024
		}
	}
	return out
}
