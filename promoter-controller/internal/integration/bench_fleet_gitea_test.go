package integration

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// BenchmarkFleetOnGitea is BenchmarkFleet's Gitea subset: N strategies
// (SLUICE_BENCH_GITEA_STRATEGIES, default 5), each on a repository of its own on a real Gitea,
// with dev, staging and prod, on one promoter process. Gitea is reached through a reverse proxy
// that counts every request per repository, so the SCM calls are counted as Gitea sees them:
// finding, creating, reading, editing and merging pull requests, and commit statuses.
//
// A wave is D1 pushed onto every <env>-next (and the dry branch and the notes) of every
// repository with the git CLI, then announced by each strategy's refresh annotation, as in
// BenchmarkFleet; webhook delivery is BenchmarkPushToMergeOnGitea's subject. It reports, per
// repository:
//   - the SCM API calls of a wave by kind, and per promotion (three per wave);
//   - the git calls of a wave;
//   - the API and git calls while idle (SLUICE_BENCH_IDLE_SECONDS, default 10) before and after
//     the wave: "no SCM call when nothing changed";
//
// and the wave's time until every dev is merged (wave-dev-s) and every prod (wave-all-s), from
// the moment every repository holds the wave (the push, wave-push-s, is timed apart). The
// baseline, in the same run and
// through the same proxy, is the floor Gitea sets: one process opening and merging the same pull
// requests by API, repository after repository (baseline-gitea-api-loop).
func BenchmarkFleetOnGitea(b *testing.B) {
	testenv.SkipIfShort(b)
	n := benchSize(b, "SLUICE_BENCH_GITEA_STRATEGIES", 5)
	idle := time.Duration(benchSize(b, "SLUICE_BENCH_IDLE_SECONDS", 10)) * time.Second
	srv := giteatest.StartForTest(b)
	proxy := newCountingProxy(b, srv.URL)
	tmpl := buildFleetTemplate(b)
	bin := promoterBin(b)
	b.Run(fmt.Sprintf("baseline-gitea-api-loop-%d", n), func(b *testing.B) {
		g := newGiteaFleet(b, srv, proxy, tmpl, fmt.Sprintf("a%d", b.N), n)
		must(b, inParallel(g.names, 4, func(_ int, name string) error { return g.push(name, g.tmpl.Wave) }))
		mark := proxy.snapshot()
		b.ResetTimer()
		start := time.Now()
		must(b, g.apiLoop(func(env string) {
			if env == fleetEnvs[0] {
				b.ReportMetric(time.Since(start).Seconds(), "wave-dev-s")
			}
		}))
		b.StopTimer()
		b.ReportMetric(time.Since(start).Seconds(), "wave-all-s")
		g.report(b, "wave", mark, len(fleetEnvs))
	})
	b.Run(fmt.Sprintf("promoter-%d-strategies", n), func(b *testing.B) {
		g := newGiteaFleet(b, srv, proxy, tmpl, fmt.Sprintf("g%d", b.N), n)
		g.bin = bin
		g.createObjects(b)
		g.run(b, idle)
	})
}

// giteaFleet is one run: n repositories on Gitea, and for the promoter's run their strategies and
// the promoter process.
type giteaFleet struct {
	srv   *giteatest.Server
	proxy *countingProxy
	tmpl  *fleetTemplate
	bin   string
	ns    string
	names []string
	cache string
	log   string
	cmd   *exec.Cmd
	ctx   context.Context
}

// newGiteaFleet creates n repositories named prefix-i on Gitea, each holding the template's refs
// before the wave.
func newGiteaFleet(b *testing.B, srv *giteatest.Server, proxy *countingProxy, tmpl *fleetTemplate, prefix string, n int) *giteaFleet {
	b.Helper()
	g := &giteaFleet{srv: srv, proxy: proxy, tmpl: tmpl, ctx: context.Background(),
		ns: fmt.Sprintf("gitea-fleet-%d", time.Now().UnixNano()), cache: b.TempDir(), log: filepath.Join(b.TempDir(), "controller.log")}
	for i := range n {
		g.names = append(g.names, fmt.Sprintf("%s-%d", prefix, i))
	}
	// Gitea is slow to take many repository creations and pushes at once: 4 at a time.
	must(b, inParallel(g.names, 4, func(_ int, name string) error {
		if _, err := srv.CreateRepo(g.ctx, name); err != nil {
			return err
		}
		return g.push(name, map[string]string{"refs/heads/main": "main", "refs/heads/dev": "dev", "refs/heads/staging": "staging", "refs/heads/prod": "prod"})
	}))
	return g
}

// apiLoop is the baseline: one process opening and merging, through the proxy, each
// environment's pull request in every repository (all dev first, then staging, then prod), with
// the head pinned as the promoter pins it. A merge Gitea refuses for now ("try again later",
// while it checks mergeability) is asked again after 500 ms, the promoter's first retry.
// envDone is told when every repository's pull request of an environment is merged.
func (g *giteaFleet) apiLoop(envDone func(env string)) error {
	p, err := scm.New("gitea", scm.Config{Key: "bench/gitea-api-loop", BaseURL: g.proxy.URL, AllowInsecureLoopbackHTTP: true,
		Credentials: scm.Credentials{Token: g.srv.Token}, Limiters: ratelimit.NewRegistry()})
	if err != nil {
		return err
	}
	for _, e := range fleetEnvs {
		head := g.tmpl.Wave["refs/heads/"+e+"-next"]
		for _, name := range g.names {
			repo := scm.Repository{Owner: g.srv.AdminUser, Name: name}
			pr, err := openPullRequest(g.ctx, p, repo, e+"-next", e)
			if err != nil {
				return err
			}
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
				_, err = p.MergePullRequest(g.ctx, repo, pr.Number, scm.MergeOptions{ExpectedHeadSHA: head})
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("merge %s into %s of %s: %w", e+"-next", e, name, err)
				}
			}
		}
		envDone(e)
	}
	return nil
}

// push pushes the template's objects to the named repository on Gitea (directly, not through the
// proxy): each ref to the commit src names in the template.
func (g *giteaFleet) push(name string, refs map[string]string) error {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return err
	}
	u, err := url.Parse(g.srv.URL + "/" + g.srv.AdminUser + "/" + name + ".git")
	if err != nil {
		return err
	}
	u.User = url.UserPassword(g.srv.AdminUser, g.srv.Token)
	args := []string{"push", "--quiet", "--force", u.String()}
	keys := make([]string, 0, len(refs))
	for ref := range refs {
		keys = append(keys, ref)
	}
	sort.Strings(keys)
	for _, ref := range keys {
		args = append(args, refs[ref]+":"+ref)
	}
	_, err = cliRun(gitBin, g.tmpl.Dir)(args...)
	return err
}

// createObjects makes the namespace, the Gitea ScmProvider (its API through the proxy) and, per
// repository, an ScmRepository (cloned through the proxy) and a strategy.
func (g *giteaFleet) createObjects(b *testing.B) {
	b.Helper()
	client := fleetClient(b)
	must(b, createNamespace(g.ctx, g.ns))
	_, err := env.Kube.CoreV1().Secrets(g.ns).Create(g.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken:       []byte(g.srv.Token),
			scmv1alpha1.GitSecretKeyUsername: []byte(g.srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(g.srv.Token),
		},
	}, metav1.CreateOptions{})
	must(b, err)
	_, err = client.ScmV1alpha1().ScmProviders(g.ns).Create(g.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: g.proxy.URL, AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	must(b, err)
	must(b, inParallel(g.names, 16, func(_ int, name string) error {
		_, err := client.ScmV1alpha1().ScmRepositories(g.ns).Create(g.ctx, &scmv1alpha1.ScmRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: scmv1alpha1.ScmRepositorySpec{
				URL: g.proxy.URL + "/" + g.srv.AdminUser + "/" + name + ".git", AllowInsecureLoopbackHTTP: true,
				ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}, Owner: g.srv.AdminUser, Name: name,
				Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		spec := promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: name}, DryBranch: "main"}
		for _, e := range fleetEnvs {
			spec.Environments = append(spec.Environments, promoterv1alpha1.Environment{Branch: e})
		}
		_, err = client.PromoterV1alpha1().PromotionStrategies(g.ns).Create(g.ctx, &promoterv1alpha1.PromotionStrategy{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec,
		}, metav1.CreateOptions{})
		return err
	}))
}

func (g *giteaFleet) run(b *testing.B, idle time.Duration) {
	b.StopTimer()
	fl := &fleet{client: fleetClient(b), ns: g.ns, names: g.names, ctx: g.ctx, shards: []*shard{{log: g.log}}}
	mark := g.proxy.snapshot()
	start := time.Now()
	g.cmd = runControllerProcess(b, g.bin, g.ns, g.cache, openLog(b, g.log))
	fl.shards[0].cmd = g.cmd
	fl.waitAll(b, 20*time.Minute, envOn("prod", g.tmpl.D0))
	b.ReportMetric(time.Since(start).Seconds(), "startup-s")
	g.report(b, "startup", mark, 1)

	time.Sleep(5 * time.Second) // the startup's last status writes come back as events
	mark = g.proxy.snapshot()
	time.Sleep(idle)
	g.reportIdle(b, "idle-before", mark, idle)

	mark = g.proxy.snapshot()
	sampler := sampleRSS(g.cmd.Process.Pid)
	// The wave's commits are pushed first, untimed, as for the API loop: both are timed from the
	// moment every repository holds them. The push is reported on its own.
	pushed := time.Now()
	must(b, inParallel(g.names, 4, func(_ int, name string) error { return g.push(name, g.tmpl.Wave) }))
	b.ReportMetric(time.Since(pushed).Seconds(), "wave-push-s")
	b.StartTimer()
	start = time.Now()
	must(b, fl.refreshAll("wave"))
	// Gitea takes seconds per pull request: 100 strategies' wave is about 20 minutes of API loop.
	fl.waitAll(b, time.Hour, envOn(fleetEnvs[0], g.tmpl.D1))
	b.ReportMetric(time.Since(start).Seconds(), "wave-dev-s")
	fl.waitAll(b, time.Hour, envOn("prod", g.tmpl.D1))
	b.StopTimer()
	b.ReportMetric(time.Since(start).Seconds(), "wave-all-s")
	fl.rss(b, "wave-peak", sampler.Stop())
	g.report(b, "wave", mark, len(fleetEnvs))

	time.Sleep(5 * time.Second)
	mark = g.proxy.snapshot()
	time.Sleep(idle)
	g.reportIdle(b, "idle-after", mark, idle)
}

// report logs the calls since mark per repository, and per promotion when a phase made some.
func (g *giteaFleet) report(b *testing.B, phase string, mark map[string]scmCalls, promotions int) {
	sum, mostAPI := g.proxy.since(mark, g.names)
	n := float64(len(g.names))
	per := func(v int64) float64 { return float64(v) / n }
	b.ReportMetric(per(sum.API()), phase+"-api-calls/repo")
	b.ReportMetric(per(sum.Adverts), phase+"-fetches/repo")
	if phase == "wave" {
		p := float64(promotions)
		b.ReportMetric(per(sum.Create)/p, "create-calls/promotion")
		b.ReportMetric(per(sum.Merge)/p, "merge-calls/promotion")
		b.ReportMetric(per(sum.API())/p, "api-calls/promotion")
	}
	b.Logf("%s, per repository on average: API %.2f (find %.2f, create %.2f, get %.2f, edit %.2f, merge %.2f, statuses %.2f, other %.2f; at most %d on one); git %.2f ref advertisements, %.2f upload-packs, %.2f pushes",
		phase, per(sum.API()), per(sum.Find), per(sum.Create), per(sum.Get), per(sum.Edit), per(sum.Merge), per(sum.Statuses), per(sum.OtherAPI), mostAPI,
		per(sum.Adverts), per(sum.Uploads), per(sum.Pushes))
}

// reportIdle reports the calls of an idle window, per repository per minute.
func (g *giteaFleet) reportIdle(b *testing.B, phase string, mark map[string]scmCalls, window time.Duration) {
	sum, mostAPI := g.proxy.since(mark, g.names)
	perMin := func(v int64) float64 { return float64(v) / float64(len(g.names)) / window.Minutes() }
	b.ReportMetric(float64(sum.API()), phase+"-api-calls")
	b.ReportMetric(perMin(sum.Adverts), phase+"-fetches/repo/min")
	b.Logf("%s (%s): %d API calls (at most %d on one repository), %d ref advertisements, %d upload-packs",
		phase, window, sum.API(), mostAPI, sum.Adverts, sum.Uploads)
}

// openPullRequest creates the pull request head -> base, and on an error (Gitea timing out under
// load) looks for the one the request may have created before trying again, for up to 2 minutes.
func openPullRequest(ctx context.Context, p scm.Provider, repo scm.Repository, head, base string) (*scm.PullRequest, error) {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		pr, err := p.CreatePullRequest(ctx, repo, scm.NewPullRequest{Title: "Promote to " + base, Head: head, Base: base})
		if err == nil {
			return pr, nil
		}
		if found, findErr := p.FindOpenPullRequest(ctx, repo, head, base); findErr == nil && found != nil {
			return found, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("open %s -> %s in %s: %w", head, base, repo.Name, err)
		}
	}
}
