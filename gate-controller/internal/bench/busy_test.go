package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// A busy Flux: real kustomize-controller reconciles every Kustomization every busyInterval and
// writes its status at the start and the end of each reconcile. Every round pushes a commit, and
// the gate closes (or the baseline patches) the moment source-controller has fetched it: while
// kustomize-controller writes the status of every Kustomization at once, as it does when a
// change arrives, which is when a gate matters.
const (
	busyTargets  = 8
	busyInterval = 2 * time.Second
	// busyRoundsPerOp rounds make one op: a round closes the gate once and sends the baseline's
	// patches once, alternating which goes first.
	busyRoundsPerOp = 6
	// bareManager is the baseline's field manager: not the controller's, so the controller never
	// takes the baseline's fields for a hold of its own.
	bareManager = "bench-bare-patch"
)

// BenchmarkHoldBusyKustomizations closes a gate that busyTargets Kustomizations reference while
// real kustomize-controller reconciles each of them every busyInterval, the moment a new commit
// has been fetched, and times how long the hold takes to be visible on every one (controller-s,
// per close). It counts what the controller met meanwhile: conflicts/target is 409 answers to its
// patches per target held, and backoffs/target the reconciles of a target that failed and went
// back to the queue's backoff (each delays that target's hold by 50 ms or more). Beside it, in the
// same run, on as many Kustomizations that the same kustomize-controller reconciles as often,
// baseline-s is a bare client-go server-side apply of the same fields with no precondition, from
// the first patch sent until all are visible.
func BenchmarkHoldBusyKustomizations(b *testing.B) {
	testenv.SkipIfShort(b)
	w := startBusyFlux(b)
	var requests conflictCounts
	stop := startBusyController(b, w.ns, &requests)
	defer stop()
	waitGate(b, w.ns, 0, func(g *gatingv1alpha1.Gate) bool { return g.Status.Open })

	var controller, baseline time.Duration
	var conflicts, rounds int64
	b.ResetTimer()
	for range b.N {
		for i := range busyRoundsPerOp {
			b.StopTimer()
			w.waitBusy(b)
			if i%2 == 1 {
				baseline += w.timeBarePatch(b)
			}
			d, c := w.timeHold(b, &requests)
			controller, conflicts = controller+d, conflicts+c
			if i%2 == 0 {
				baseline += w.timeBarePatch(b)
			}
			rounds++
		}
	}
	b.StopTimer()
	b.ReportMetric(controller.Seconds()/float64(rounds), "controller-s")
	b.ReportMetric(baseline.Seconds()/float64(rounds), "baseline-s")
	b.ReportMetric(controller.Seconds()/baseline.Seconds(), "ratio")
	b.ReportMetric(float64(conflicts)/float64(rounds*busyTargets), "conflicts/target")
	b.ReportMetric(float64(requests.backoffs.Load())/float64(rounds*busyTargets), "backoffs/target")
}

// busyFlux is a namespace with real Flux, a repository with one folder per Kustomization, and
// busyTargets gated Kustomizations held-N beside busyTargets bare-N that no gate references.
type busyFlux struct {
	ns      string
	repo    *gittest.Repo
	commits int
	head    string
	gated   []string
	bare    []string
}

func startBusyFlux(b *testing.B) *busyFlux {
	b.Helper()
	w := &busyFlux{ns: newNamespace(b, "busy")}
	createGate(b, w.ns, false)
	var url string
	w.repo, url = gittest.NewGitServedRepo(b, "fleet")
	for i := range busyTargets {
		w.gated = append(w.gated, fmt.Sprintf("held-%d", i))
		w.bare = append(w.bare, fmt.Sprintf("bare-%d", i))
	}
	w.commit(b)
	flux.Start(b, env, flux.Options{Namespace: w.ns})
	flux.CreateGitRepository(b, env, w.ns, "fleet", flux.GitRepositorySpec{URL: url, Branch: "main", Interval: busyInterval})
	for _, name := range w.gated {
		flux.CreateKustomization(b, env, w.ns, name, flux.KustomizationSpec{GitRepository: "fleet", Path: "./" + name,
			TargetNamespace: w.ns, Interval: busyInterval, Annotations: map[string]string{gate.GatesAnnotation: "prod"}})
	}
	for _, name := range w.bare {
		flux.CreateKustomization(b, env, w.ns, name, flux.KustomizationSpec{GitRepository: "fleet", Path: "./" + name,
			TargetNamespace: w.ns, Interval: busyInterval})
	}
	return w
}

// commit pushes a commit that changes every Kustomization's ConfigMap.
func (w *busyFlux) commit(b *testing.B) {
	b.Helper()
	w.commits++
	files := map[string]string{}
	for _, name := range w.all() {
		files[name+"/configmap.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: v%d\n", name, w.commits)
	}
	w.head = w.repo.CommitFiles(b, "main", files, fmt.Sprintf("value v%d", w.commits))
}

func (w *busyFlux) all() []string { return append(append([]string(nil), w.gated...), w.bare...) }

// commitAndWaitFetched pushes a commit and returns once source-controller has fetched it.
func (w *busyFlux) commitAndWaitFetched(b *testing.B) {
	b.Helper()
	w.commit(b)
	want := flux.Revision("main", w.head)
	err := testenv.Wait(context.Background(), flux.ApplyTimeout, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(flux.GitRepositories).Namespace(w.ns).Get(ctx, "fleet", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedString(u.Object, "status", "artifact", "revision")
		return got == want, nil
	})
	if err != nil {
		b.Fatalf("source-controller did not fetch %s: %v", want, err)
	}
}

// waitBusy waits until no Kustomization is suspended and kustomize-controller has applied the
// last commit with the current spec of each.
func (w *busyFlux) waitBusy(b *testing.B) {
	b.Helper()
	for _, name := range w.all() {
		flux.WaitForStatus(b, env, flux.Kustomizations, w.ns, name, func(status map[string]any) bool {
			applied, _ := status["lastAppliedRevision"].(string)
			return applied == flux.Revision("main", w.head) && reconciledSpec(w.ns, name, status)
		}, "applied %s after the hold", w.head)
	}
}

// reconciledSpec says whether the Kustomization is not suspended and its Ready condition is of
// its current generation.
func reconciledSpec(ns, name string, status map[string]any) bool {
	u, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	if suspended, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); suspended {
		return false
	}
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			gen, _ := m["observedGeneration"].(int64)
			return gen == u.GetGeneration()
		}
	}
	return false
}

// timeHold closes the gate, waits until every gated Kustomization carries the hold, and returns
// the time that took with the conflicts the controller met; then it opens the gate and waits for
// every release.
func (w *busyFlux) timeHold(b *testing.B, requests *conflictCounts) (time.Duration, int64) {
	b.Helper()
	counter := countHeld(b, w.ns, len(w.gated))
	w.commitAndWaitFetched(b)
	requests.counting.Store(true)
	before := requests.conflicts.Load()
	b.StartTimer()
	start := time.Now()
	setGateClosed(b, w.ns, true)
	counter.wait(b, 5*time.Minute)
	d := time.Since(start)
	b.StopTimer()
	conflicts := requests.conflicts.Load() - before
	requests.counting.Store(false)
	setGateClosed(b, w.ns, false)
	waitGate(b, w.ns, 0, func(g *gatingv1alpha1.Gate) bool { return g.Status.Open })
	w.waitReleased(b, w.gated)
	return d, conflicts
}

// timeBarePatch sends the hold's fields to every bare Kustomization at once, by server-side apply
// with no resourceVersion, and returns the time until all carry them; then it takes them back.
func (w *busyFlux) timeBarePatch(b *testing.B) time.Duration {
	b.Helper()
	client := dynamic.NewForConfigOrDie(rest.CopyConfig(env.Config)).Resource(flux.Kustomizations).Namespace(w.ns)
	verdict := hold.Verdict{Hold: true, Reason: "held by gate " + w.ns + "/prod is closed", Gates: []string{w.ns + "/prod"}}
	plan := hold.Decide(hold.Target{}, hold.ModeBoth, verdict)
	counter := countHeld(b, w.ns, len(w.bare))
	w.commitAndWaitFetched(b)
	b.StartTimer()
	start := time.Now()
	applyAll(b, w.bare, func(name string) error {
		ref := hold.Ref{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: w.ns, Name: name}
		_, err := client.Apply(context.Background(), name, plan.Desired.ApplyObject(ref), metav1.ApplyOptions{FieldManager: bareManager, Force: true})
		return err
	})
	counter.wait(b, 5*time.Minute)
	d := time.Since(start)
	b.StopTimer()
	applyAll(b, w.bare, func(name string) error {
		ref := hold.Ref{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: w.ns, Name: name}
		_, err := client.Apply(context.Background(), name, hold.Desired{}.ApplyObject(ref), metav1.ApplyOptions{FieldManager: bareManager, Force: true})
		return err
	})
	w.waitReleased(b, w.bare)
	return d
}

// applyAll runs apply for every name at once.
func applyAll(b *testing.B, names []string, apply func(name string) error) {
	b.Helper()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { errs[i] = apply(name) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// waitReleased waits until none of the named Kustomizations carries a hold record.
func (w *busyFlux) waitReleased(b *testing.B, names []string) {
	b.Helper()
	for _, name := range names {
		err := testenv.Wait(context.Background(), 5*time.Minute, func(ctx context.Context) (bool, error) {
			u, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(w.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			_, held := u.GetAnnotations()[hold.RecordAnnotation]
			return !held, nil
		})
		if err != nil {
			b.Fatalf("%s/%s still held: %v", w.ns, name, err)
		}
	}
}

// conflictCounts counts, while counting is on, the 409 answers to the controller's writes to
// Kustomizations, and the reconciles of a target that failed and went back to the queue's backoff.
type conflictCounts struct {
	counting  atomic.Bool
	conflicts atomic.Int64
	backoffs  atomic.Int64
}

// backoffLog is what the controller's queue logs for a reconcile sent back with backoff.
const backoffLog = "reconcile failed; retrying with backoff"

// Handle counts the log records of the target reconciles sent back with backoff.
func (c *conflictCounts) Handle(_ context.Context, r slog.Record) error {
	if c.counting.Load() && r.Message == backoffLog {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "key" && strings.HasPrefix(a.Value.String(), "kustomizations.") {
				c.backoffs.Add(1)
			}
			return true
		})
	}
	return nil
}

func (c *conflictCounts) Enabled(context.Context, slog.Level) bool { return true }
func (c *conflictCounts) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *conflictCounts) WithGroup(string) slog.Handler            { return c }

func (c *conflictCounts) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && c.counting.Load() && req.Method != http.MethodGet &&
			strings.Contains(req.URL.Path, "/kustomizations/") && resp.StatusCode == http.StatusConflict {
			c.conflicts.Add(1)
		}
		return resp, err
	})
}

// startBusyController runs the gate-controller in this process, watching ns, with its default
// workers and client budget.
func startBusyController(b *testing.B, ns string, requests *conflictCounts) (stop func()) {
	b.Helper()
	opts := options.Defaults("gate-controller")
	opts.Namespace = ns
	return runController(b, opts, requests.wrap, slog.New(requests))
}
