package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// The controller and the baseline get the same client budget and parallelism.
const (
	holdTargets = 1000
	qps         = 500
	burst       = 500
	parallelism = 4
)

// BenchmarkHoldThousandKustomizations closes a gate that 1,000 Kustomizations reference and
// times until every one is held (ns/op and controller-s). Beside it, in the same run and on
// fresh objects, baseline-s is a plain client-go loop sending the same 1,000 server-side apply
// patches with the same QPS, burst and parallelism; ratio is controller-s / baseline-s. Run it
// with -benchtime 4x or more on a shared machine: the pairs alternate which side goes first.
// cpu-ratio compares the CPU the API server, etcd and the test process spent on each side, which
// the neighbours' load moves much less than the wall time.
func BenchmarkHoldThousandKustomizations(b *testing.B) {
	testenv.SkipIfShort(b)
	var controllerTotal, baselineTotal cost
	var requests requestCounts
	for i := range b.N {
		b.StopTimer()
		// Every other pair runs the baseline first, so that neither side always meets the API
		// server after the other has filled it.
		if i%2 == 1 {
			baselineTotal.add(timeBaseline(b))
		}
		controllerTotal.add(timeController(b, &requests))
		if i%2 == 0 {
			baselineTotal.add(timeBaseline(b))
		}
	}
	controller, baseline := controllerTotal.wall.Seconds()/float64(b.N), baselineTotal.wall.Seconds()/float64(b.N)
	b.ReportMetric(controller, "controller-s")
	b.ReportMetric(baseline, "baseline-s")
	b.ReportMetric(controller/baseline, "ratio")
	// The CPU the API server, etcd and this process spent meanwhile: on a shared machine, where
	// the wall time moves with the neighbours' load, the work itself moves much less.
	b.ReportMetric(controllerTotal.cpu/float64(b.N), "controller-cpu-s")
	b.ReportMetric(baselineTotal.cpu/float64(b.N), "baseline-cpu-s")
	b.ReportMetric(controllerTotal.cpu/baselineTotal.cpu, "cpu-ratio")
	// The controller's own requests while it holds the targets, per target: the baseline sends one
	// write each and reads nothing.
	b.ReportMetric(float64(requests.writes.Load())/float64(b.N*holdTargets), "writes/target")
	b.ReportMetric(float64(requests.reads.Load())/float64(b.N*holdTargets), "reads/target")
}

// requestCounts counts the controller's API requests while counting is on: writes (POST, PUT,
// PATCH, DELETE) and reads (GET other than watches).
type requestCounts struct {
	counting      atomic.Bool
	writes, reads atomic.Int64
}

func (c *requestCounts) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if c.counting.Load() {
			switch {
			case req.Method != http.MethodGet:
				c.writes.Add(1)
			case req.URL.Query().Get("watch") != "true":
				c.reads.Add(1)
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// cost is the wall time of a hold, and the CPU seconds the control plane and this process spent
// meanwhile.
type cost struct {
	wall time.Duration
	cpu  float64
}

func (c *cost) add(o cost) { c.wall, c.cpu = c.wall+o.wall, c.cpu+o.cpu }

// measure starts timing; the returned function stops and returns the cost.
func measure(b *testing.B) func() cost {
	start, cpu := time.Now(), controlPlaneCPU(b)
	return func() cost { return cost{wall: time.Since(start), cpu: controlPlaneCPU(b) - cpu} }
}

// controlPlaneCPU is the CPU time, in seconds, of this process and of its children, the API
// server and etcd the test environment started.
func controlPlaneCPU(b *testing.B) float64 {
	self := os.Getpid()
	total := 0.0
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command, which is in parentheses and may hold spaces: state, ppid, ...,
		// utime and stime (the 12th and 13th), in clock ticks of 1/100 s.
		i := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat)[i+1:])
		if len(fields) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if pid != self && ppid != self {
			continue
		}
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		total += (utime + stime) / 100
	}
	return total
}

func timeController(b *testing.B, requests *requestCounts) cost {
	ns := newNamespace(b, "hold")
	createGate(b, ns, false)
	createKustomizations(b, ns, holdTargets)

	opts := options.Defaults("gate-controller")
	opts.Namespace = ns
	opts.Workers = parallelism
	opts.KubeAPIQPS, opts.KubeAPIBurst = qps, burst
	defer runController(b, opts, requests.wrap, slog.New(slog.NewTextHandler(io.Discard, nil)))()
	waitGate(b, ns, 0, func(g *gatingv1alpha1.Gate) bool { return g.Status.Open })

	counter := countHeld(b, ns, holdTargets)
	b.StartTimer()
	stop := measure(b)
	requests.counting.Store(true)
	setGateClosed(b, ns, true)
	counter.wait(b, 5*time.Minute)
	c := stop()
	requests.counting.Store(false)
	b.StopTimer()
	return c
}

func timeBaseline(b *testing.B) cost {
	ns := newNamespace(b, "baseline")
	createGate(b, ns, true)
	createKustomizations(b, ns, holdTargets)
	list, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// The very patches the controller sends: hold by spec.suspend and the annotation, with the
	// record, the UID and resourceVersion preconditions.
	verdict := hold.Verdict{Hold: true, Reason: "held by gate " + ns + "/prod is closed (Manual: closed by hand (spec.closed is true))", Gates: []string{ns + "/prod"}}
	plan := hold.Decide(hold.Target{}, hold.ModeBoth, verdict)
	type patch struct {
		name string
		ref  hold.Ref
	}
	patches := make([]patch, len(list.Items))
	for i, u := range list.Items {
		patches[i] = patch{name: u.GetName(), ref: hold.Ref{
			APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: ns, Name: u.GetName(),
			UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		}}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = qps, burst
	client := dynamic.NewForConfigOrDie(cfg).Resource(flux.Kustomizations).Namespace(ns)

	counter := countHeld(b, ns, holdTargets)
	stop := measure(b)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range parallelism {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(patches)); i = next.Add(1) - 1 {
				p := patches[i]
				_, err := client.Apply(context.Background(), p.name, plan.Desired.ApplyObject(p.ref), metav1.ApplyOptions{FieldManager: hold.FieldManager, Force: true})
				if err != nil {
					failed.Store(err)
				}
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	counter.wait(b, 5*time.Minute)
	return stop()
}

func waitGate(b *testing.B, ns string, holding int32, cond func(*gatingv1alpha1.Gate) bool) *gatingv1alpha1.Gate {
	b.Helper()
	var last *gatingv1alpha1.Gate
	err := testenv.Wait(context.Background(), 10*time.Minute, func(ctx context.Context) (bool, error) {
		g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "prod", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = g
		return g.Status.ObservedGeneration == g.Generation && g.Status.Holding == holding && cond(g), nil
	})
	if err != nil {
		b.Fatalf("gate %s/prod: %v; last status %+v", ns, err, last)
	}
	return last
}

// BenchmarkControllerRSS runs the gate-controller binary as a process, watching one namespace
// where a closed gate holds N Kustomizations, and reports the process's resident memory once
// every target is held: rss-MiB (VmRSS), peak-MiB (VmHWM) and heap-MiB (Go heap in use, from
// its /metrics). targets=0 is the baseline: the same process with nothing to hold.
func BenchmarkControllerRSS(b *testing.B) {
	testenv.SkipIfShort(b)
	bin := buildController(b)
	for _, n := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			var rss, peak, heap float64
			for range b.N {
				b.StopTimer()
				r, p, h := measureRSS(b, bin, n)
				rss, peak, heap = rss+r, peak+p, heap+h
			}
			b.ReportMetric(rss/float64(b.N), "rss-MiB")
			b.ReportMetric(peak/float64(b.N), "peak-MiB")
			b.ReportMetric(heap/float64(b.N), "heap-MiB")
		})
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

func buildController(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gate-controller-bench-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "gate-controller")
		out, err := exec.Command("go", "build", "-o", built, "github.com/sluicehq/sluice/gate-controller/cmd/gate-controller").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return built
}

func measureRSS(b *testing.B, bin string, n int) (rss, peak, heap float64) {
	ns := newNamespace(b, fmt.Sprintf("rss%d", n))
	createGate(b, ns, true)
	createKustomizations(b, ns, n)
	metricsAddr := freeAddr(b)
	cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--namespace", ns,
		"--workers", strconv.Itoa(parallelism), "--kube-api-qps", strconv.Itoa(qps), "--kube-api-burst", strconv.Itoa(burst),
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	b.StartTimer()
	waitGate(b, ns, int32(n), func(g *gatingv1alpha1.Gate) bool { return !g.Status.Open })
	b.StopTimer()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	return procKiB(b, status, "VmRSS") / 1024, procKiB(b, status, "VmHWM") / 1024, heapInUse(b, metricsAddr) / (1 << 20)
}

func procKiB(b *testing.B, status []byte, field string) float64 {
	sc := bufio.NewScanner(strings.NewReader(string(status)))
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), ":"); ok && name == field {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kib
		}
	}
	b.Fatalf("no %s in /proc status", field)
	return 0
}

func heapInUse(b *testing.B, addr string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatal("no go_memstats_heap_inuse_bytes in /metrics")
	return 0
}

func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runController runs the gate-controller in this process with opts, its API requests passing
// through wrap, until the returned stop is called.
func runController(b *testing.B, opts options.Options, wrap func(http.RoundTripper) http.RoundTripper, log *slog.Logger) (stop func()) {
	b.Helper()
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(wrap)
	m, err := manager.New("gate-controller", opts, cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	if err := setup.Setup(m, setup.Config{}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}
