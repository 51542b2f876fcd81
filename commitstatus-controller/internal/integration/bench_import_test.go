package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// BenchmarkGiteaStatusToImportToPromotion measures, on a real Gitea, a CI check gating a
// promotion: from the moment a check turns success on the proposed hydrated commit (a status
// set through Gitea's API) to the imported CommitStatus (Gitea's status webhook wakes the
// import; its poll is 10 minutes, so only the delivery can), and on to the pull request merged
// by the promoter. The SCM calls the import makes are counted exactly at a proxy in front of
// Gitea, by the controller's User-Agent.
//
// The baseline, in the same run on the same Gitea, is the best a user could run instead: their
// own webhook receiver that merges the pull request through Gitea's API when the status
// arrives. Its delivery time is the floor of anything woken by Gitea's webhooks; its one merge
// call is the floor of calls.
func BenchmarkGiteaStatusToImportToPromotion(b *testing.B) {
	testenv.SkipIfShort(b)
	srv := giteatest.StartForTest(b)
	// The framework calls each sub-benchmark more than once (N=1 first): the fixtures are made
	// once, for the whole benchmark.
	bl := newBaselineMerger(b, srv)
	f := newImportBench(b, srv)
	b.Run("baseline-own-webhook-receiver-merges-by-api", func(b *testing.B) {
		var hook, merged time.Duration
		b.ResetTimer()
		for i := range b.N {
			h, m := bl.round(b, i)
			hook, merged = hook+h, merged+m
		}
		b.ReportMetric(hook.Seconds()/float64(b.N), "s-status-to-webhook")
		b.ReportMetric(merged.Seconds()/float64(b.N), "s-status-to-merged")
		b.ReportMetric(1, "scm-calls/status")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("sluice-import-then-promoter", func(b *testing.B) {
		var imported, merged time.Duration
		var calls, importCalls int64
		b.ResetTimer()
		for i := range b.N {
			r := f.round(b, i)
			imported, merged = imported+r.imported, merged+r.merged
			calls, importCalls = calls+r.callsToImport, importCalls+r.callsInRound
		}
		b.ReportMetric(imported.Seconds()/float64(b.N), "s-status-to-imported")
		b.ReportMetric(merged.Seconds()/float64(b.N), "s-status-to-merged")
		b.ReportMetric(float64(calls)/float64(b.N), "scm-calls/status")
		b.ReportMetric(float64(importCalls)/float64(b.N), "scm-calls/round")
		b.ReportMetric(0, "ns/op")
	})
}

// callCounter is a reverse proxy in front of Gitea that counts the requests of one User-Agent.
type callCounter struct {
	URL   string
	agent string
	mu    sync.Mutex
	calls []string
}

func newCallCounter(b *testing.B, target, agent string) *callCounter {
	u, err := url.Parse(target)
	must(b, err)
	c := &callCounter{agent: agent}
	proxy := httputil.NewSingleHostReverseProxy(u)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.UserAgent(), c.agent) {
			c.mu.Lock()
			c.calls = append(c.calls, r.Method+" "+r.URL.Path)
			c.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(s.Close)
	c.URL = s.URL
	return c
}

func (c *callCounter) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(len(c.calls))
}

// importBench is one strategy whose staging waits for the Gitea check "ci/lint" on its proposed
// commit, with the promoter and the import running.
type importBench struct {
	srv      *giteatest.Server
	ns       string
	repo     *git.Repository
	counter  *callCounter
	proposed string
}

func newImportBench(b *testing.B, srv *giteatest.Server) *importBench {
	ctx := context.Background()
	installAllCRDs(b)
	cloneURL, err := srv.CreateRepo(ctx, "bench-app")
	must(b, err)
	repo, d0 := cloneWithDry(b, srv, cloneURL)
	hydrate(b, repo, "", "staging", d0)
	ns := newNamespace(b)
	a := cluster{name: "A", env: env}
	giteaOnRepo(b, a, ns, srv, cloneURL, "bench-app")
	// The controller reaches Gitea through the counting proxy; the promoter and git go direct.
	counter := newCallCounter(b, srv.URL, "sluice-commitstatus-controller")
	_, err = testenv.Update(ctx, env.Sluice.ScmV1alpha1().ScmProviders(ns), "gitea", func(p *scmv1alpha1.ScmProvider) { p.Spec.BaseURL = counter.URL })
	must(b, err)
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Interval:               &metav1.Duration{Duration: 3 * time.Second},
			ProposedCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "ci-lint"}},
			Environments:           []promoterv1alpha1.Environment{{Branch: "staging"}},
		},
	}, metav1.CreateOptions{})
	must(b, err)
	importer, addr := importerWithWebhook(b, 10*time.Minute)
	startController(b, controllerOptions{setup: importer})
	runController(b, buildController(b, "promoter-controller"), env.Kubeconfig, "--git-cache-dir", b.TempDir())
	statusHookOn(b, srv, "bench-app", addr, ns)
	return &importBench{srv: srv, ns: ns, repo: repo, counter: counter}
}

type importRound struct {
	imported, merged            time.Duration
	callsToImport, callsInRound int64
}

// round proposes a new dry commit (untimed), waits until the promoter holds it for ci/lint, then
// sets ci/lint success on the proposed commit and times the import and the merge.
func (f *importBench) round(b *testing.B, i int) importRound {
	ctx := context.Background()
	b.StopTimer()
	before := f.counter.count()
	_ = f.repo.Fetch(ctx, "main")
	dry, err := f.repo.CommitFiles(ctx, git.CommitRequest{Branch: "main", Files: map[string][]byte{"values.yaml": []byte(fmt.Sprintf("v: %d\n", i+1))}, Message: fmt.Sprint("change ", i)})
	must(b, err)
	proposed := hydrate(b, f.repo, "staging", "staging-next", dry)
	must(b, testenv.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		e := strategyEnv(ps, "staging")
		return e.Proposed.HydratedSHA == proposed && e.PullRequest != nil && e.PullRequest.URL != "" && strings.Contains(e.Blocked, "ci-lint"), nil
	}))
	// The import has read the new commit (it has no statuses yet); quiet before the clock starts.
	time.Sleep(time.Second)
	imports, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(f.ns).Watch(ctx, metav1.ListOptions{LabelSelector: commitstatusv1alpha1.ImportedLabel + "=true"})
	must(b, err)
	defer imports.Stop()
	// The promoter reports the merge on its PullRequest as soon as Gitea's merge call returns.
	prs, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Watch(ctx, metav1.ListOptions{})
	must(b, err)
	defer prs.Stop()
	startCalls := f.counter.count()
	b.StartTimer()

	start := time.Now()
	setGiteaStatus(b, f.srv, "bench-app", proposed, "ci/lint", "success")
	awaitEvent(b, imports, "the imported ci/lint success", func(obj runtime.Object) bool {
		cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
		return ok && cs.Spec.SHA == proposed && cs.Spec.Name == "ci/lint" && cs.Spec.Phase == commitstatusv1alpha1.CommitStatusSuccess
	})
	r := importRound{imported: time.Since(start), callsToImport: f.counter.count() - startCalls}
	awaitEvent(b, prs, "the pull request merged", func(obj runtime.Object) bool {
		pr, ok := obj.(*promoterv1alpha1.PullRequest)
		return ok && pr.Status.State == promoterv1alpha1.PullRequestMerged
	})
	r.merged = time.Since(start)
	b.StopTimer()
	must(b, testenv.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && strategyEnv(ps, "staging").Active.DrySHA == dry, err
	}))
	r.callsInRound = f.counter.count() - before
	b.StartTimer()
	return r
}

// baselineMerger is a user's own webhook receiver: when Gitea delivers "ci/lint" success for a
// pull request's head, it merges the pull request through Gitea's API.
type baselineMerger struct {
	srv     *giteatest.Server
	mu      sync.Mutex
	waiting map[string]chan time.Time
}

func newBaselineMerger(b *testing.B, srv *giteatest.Server) *baselineMerger {
	ctx := context.Background()
	_, err := srv.CreateRepo(ctx, "bench-baseline", giteatest.AutoInit())
	must(b, err)
	bl := &baselineMerger{srv: srv, waiting: map[string]chan time.Time{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	s := &http.Server{Handler: http.HandlerFunc(bl.deliver), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.Serve(ln) }()
	b.Cleanup(func() { _ = s.Close() })
	must(b, srv.API(ctx, "POST", "/repos/"+srv.AdminUser+"/bench-baseline/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"status"},
		"config": map[string]string{"url": "http://" + ln.Addr().String() + "/", "content_type": "json"},
	}, nil))
	return bl
}

func (bl *baselineMerger) deliver(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	var ev struct {
		SHA     string `json:"sha"`
		State   string `json:"state"`
		Context string `json:"context"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil || ev.State != "success" || ev.Context != "ci/lint" {
		return
	}
	bl.mu.Lock()
	done := bl.waiting[ev.SHA]
	delete(bl.waiting, ev.SHA)
	bl.mu.Unlock()
	if done != nil {
		done <- arrived
	}
}

// round opens a pull request (untimed), then sets ci/lint success on its head and times the
// delivery and the merge the receiver makes.
func (bl *baselineMerger) round(b *testing.B, i int) (hook, merged time.Duration) {
	ctx := context.Background()
	b.StopTimer()
	branch := fmt.Sprintf("change-%d-%d", i, time.Now().UnixNano())
	var file struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	must(b, bl.srv.API(ctx, "POST", "/repos/"+bl.srv.AdminUser+"/bench-baseline/contents/"+branch+".txt", map[string]any{
		"branch": "main", "new_branch": branch, "message": branch,
		"content": base64.StdEncoding.EncodeToString([]byte(branch)),
	}, &file))
	var pr struct {
		Number int64 `json:"number"`
	}
	must(b, bl.srv.API(ctx, "POST", "/repos/"+bl.srv.AdminUser+"/bench-baseline/pulls", map[string]any{
		"head": branch, "base": "main", "title": branch,
	}, &pr))
	done := make(chan time.Time, 1)
	bl.mu.Lock()
	bl.waiting[file.Commit.SHA] = done
	bl.mu.Unlock()
	b.StartTimer()

	start := time.Now()
	setGiteaStatus(b, bl.srv, "bench-baseline", file.Commit.SHA, "ci/lint", "success")
	select {
	case arrived := <-done:
		hook = arrived.Sub(start)
	case <-time.After(2 * time.Minute):
		b.Fatal("Gitea did not deliver the status webhook within 2 minutes")
	}
	// The receiver's one call: the merge (retried while Gitea still checks mergeability).
	must(b, testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		return bl.srv.API(ctx, "POST", fmt.Sprintf("/repos/%s/bench-baseline/pulls/%d/merge", bl.srv.AdminUser, pr.Number),
			map[string]any{"Do": "merge", "head_commit_id": file.Commit.SHA}, nil) == nil, nil
	}))
	return hook, time.Since(start)
}

// awaitEvent reads w until an object satisfies cond, for at most two minutes.
func awaitEvent(b testing.TB, w watch.Interface, what string, cond func(runtime.Object) bool) {
	b.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("the watch ended before %s", what)
			}
			if cond(ev.Object) {
				return
			}
		case <-timeout:
			b.Fatalf("%s: not within 2 minutes", what)
		}
	}
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// setGiteaStatus sets a commit status through Gitea's API, as a CI system does.
func setGiteaStatus(b testing.TB, srv *giteatest.Server, repo, sha, check, state string) {
	b.Helper()
	must(b, srv.API(context.Background(), "POST", fmt.Sprintf("/repos/%s/%s/statuses/%s", srv.AdminUser, repo, sha), map[string]any{
		"state": state, "context": check, "description": "lint " + state, "target_url": "https://ci.example.com/lint",
	}, nil))
}
