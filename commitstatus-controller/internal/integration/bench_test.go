package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/github"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
)

// burst is one run: n CommitStatuses created at once against an in-process GitHub, timed until
// every one is synced.
type burst struct {
	n int
	// quota, when set, is GitHub's request budget per window.
	quota  int
	window time.Duration
	// rateLimit is the ScmProvider's spec.rateLimit; nil keeps GitHub's default (1.25/s, burst 10).
	rateLimit *scmv1alpha1.RateLimit
	// kubeQPS is the controller's --kube-api-qps; zero keeps the chart's 50 (burst 100).
	kubeQPS float64
}

// run creates the objects with a fast client, waits until all are synced, and reports the time,
// the SCM calls and the 429s. The controller runs with the chart's defaults: 4 workers.
func (bu burst) run(b *testing.B) {
	testenv.SkipIfShort(b)
	var elapsed, creating time.Duration
	var posts, throttled int64
	for range b.N {
		b.StopTimer()
		srv := scmtest.NewGitHub(b, githubToken)
		srv.AddRepo("acme", "app")
		if bu.quota > 0 {
			srv.SetQuota(bu.quota, bu.window)
		}
		ns := githubSetup(b, srv, func(p *scmv1alpha1.ScmProvider) { p.Spec.RateLimit = bu.rateLimit })
		ctrl := startController(b, controllerOptions{mutate: func(o *options.Options) {
			o.Workers = 4
			if bu.kubeQPS > 0 {
				o.KubeAPIQPS, o.KubeAPIBurst = bu.kubeQPS, int(2*bu.kubeQPS)
			}
		}})
		watch := watchSynced(b, ns)
		b.StartTimer()

		start := time.Now()
		createMany(b, ns, bu.n)
		creating += time.Since(start)
		watch.wait(b, bu.n, 10*time.Minute)
		elapsed += time.Since(start)

		b.StopTimer()
		posts += srv.StatusPosts()
		throttled += srv.Throttled()
		if accepted := srv.StatusPosts() - srv.Throttled(); accepted != int64(bu.n) {
			b.Errorf("GitHub accepted %d statuses for %d CommitStatuses; each must be sent exactly once", accepted, bu.n)
		}
		watch.stop()
		ctrl.stop()
		b.StartTimer()
	}
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s-to-all-synced")
	b.ReportMetric(creating.Seconds()/float64(b.N), "s-creating")
	b.ReportMetric(float64(posts)/float64(b.N), "scm-calls/op")
	b.ReportMetric(float64(throttled)/float64(b.N), "429s/op")
	b.ReportMetric(0, "ns/op")
}

// createMany creates n CommitStatuses, 16 at a time, through a client that is not rate limited.
func createMany(b *testing.B, ns string, n int) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := sluice.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	names := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 16 {
		wg.Go(func() {
			for i := range names {
				cs := newCommitStatus(ns, fmt.Sprintf("status-%04d", i), "app", fmt.Sprintf("%040x", i+1), commitstatusv1alpha1.CommitStatusSuccess)
				if _, err := client.CommitstatusV1alpha1().CommitStatuses(ns).Create(context.Background(), cs, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
}

// syncedWatch counts, through an informer, the CommitStatuses of a namespace that are synced.
type syncedWatch struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	synced map[string]bool
	change chan struct{}
}

func watchSynced(b *testing.B, ns string) *syncedWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &syncedWatch{cancel: cancel, synced: map[string]bool{}, change: make(chan struct{}, 1)}
	factory := sluiceinformers.NewSharedInformerFactoryWithOptions(env.Sluice, 0, sluiceinformers.WithNamespace(ns))
	informer := factory.Commitstatus().V1alpha1().CommitStatuses().Informer()
	observe := func(obj any) {
		cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
		if !ok {
			return
		}
		done := synced(commitstatusv1alpha1.CommitStatusSuccess)(cs)
		w.mu.Lock()
		w.synced[cs.Name] = done
		w.mu.Unlock()
		select {
		case w.change <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return w
}

func (w *syncedWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ok := range w.synced {
		if ok {
			n++
		}
	}
	return n
}

func (w *syncedWatch) wait(b *testing.B, n int, timeout time.Duration) {
	deadline := time.After(timeout)
	for w.count() < n {
		select {
		case <-w.change:
		case <-deadline:
			b.Fatalf("only %d of %d CommitStatuses synced within %s", w.count(), n, timeout)
		}
	}
}

func (w *syncedWatch) stop() { w.cancel() }

// BenchmarkThousandCommitStatuses creates 1,000 CommitStatuses at once against the in-process
// GitHub. The ScmProvider allows 500 requests/s (burst 100), so the client-side limit is not what
// is measured; GitHub's default of 1.25/s would take 13 minutes by design. "controller" runs with
// the chart's defaults (4 workers, --kube-api-qps=50), where status writes set the pace;
// "controller-kube-qps-200" shows that. The baseline "provider-only" sends the same 1,000 statuses
// straight through the provider, 4 at a time, with no Kubernetes at all.
func BenchmarkThousandCommitStatuses(b *testing.B) {
	const n = 1000
	fast := &scmv1alpha1.RateLimit{QPS: "500", Burst: 100}
	b.Run("controller", burst{n: n, rateLimit: fast}.run)
	b.Run("controller-kube-qps-200", burst{n: n, rateLimit: fast, kubeQPS: 200}.run)
	b.Run("provider-only", func(b *testing.B) {
		testenv.SkipIfShort(b)
		srv := scmtest.NewGitHub(b, githubToken)
		srv.AddRepo("acme", "app")
		p, err := github.New(scm.Config{
			Key: "bench/provider-only", BaseURL: srv.URL, CABundle: srv.CAPEM,
			Credentials: scm.Credentials{Token: githubToken},
			RateLimit:   ratelimit.Limits{QPS: 500, Burst: 100}, Limiters: ratelimit.NewRegistry(),
		})
		if err != nil {
			b.Fatal(err)
		}
		repo := scm.Repository{Owner: "acme", Name: "app"}
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			jobs := make(chan int)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for i := range jobs {
						if _, err := p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{
							SHA: fmt.Sprintf("%040x", i+1), Name: "sluice/health", State: scm.StatusSuccess,
						}); err != nil {
							b.Error(err)
						}
					}
				})
			}
			for i := range n {
				jobs <- i
			}
			close(jobs)
			wg.Wait()
		}
		b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s-to-all-synced")
		b.ReportMetric(float64(srv.StatusPosts())/float64(b.N), "scm-calls/op")
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkQuota100PerMinute creates 110 CommitStatuses at once against a GitHub that accepts
// 100 requests per minute and refuses more with 429 and Retry-After, like its primary rate limit.
// "github-defaults" keeps the ScmProvider's default bucket (1.25/s, burst 10: 75 a minute);
// the baseline "no-client-limit" allows 500/s, so only GitHub's headers hold the controller back.
func BenchmarkQuota100PerMinute(b *testing.B) {
	const n = 110
	b.Run("github-defaults", burst{n: n, quota: 100, window: time.Minute}.run)
	b.Run("no-client-limit", burst{n: n, quota: 100, window: time.Minute, rateLimit: &scmv1alpha1.RateLimit{QPS: "500", Burst: 100}}.run)
}
