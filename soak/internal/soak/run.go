// Package soak runs every Sluice controller, two replicas each under leader election, against
// the real local control plane and a real git server, drives a continuous workload, injects
// faults from a seeded schedule, and checks invariants on what git and the cluster show.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// Config sizes a soak run.
type Config struct {
	Seed       uint64
	Duration   time.Duration
	Strategies int
	// HydrateEvery is how often the hydrator makes a dry commit, across all strategies.
	HydrateEvery time.Duration
	// FaultEvery is the mean gap between faults.
	FaultEvery time.Duration
	// ConvergeWithin bounds the time everything takes to settle once the faults stop.
	ConvergeWithin time.Duration
	BinDir, LogDir string
	// Gitea puts one strategy in four on a real Gitea behind a fault proxy, the rest on the
	// plain git server.
	Gitea bool
	// Flux deploys one strategy in four's prod with the real source-controller and
	// kustomize-controller (make testbin-flux), each Kustomization held by its prod gate.
	Flux bool
	// Releases runs ManifestReleases (one per ten strategies), each upgraded every minute.
	Releases bool
}

// soakRun holds one run's parts.
type soakRun struct {
	cfg    Config
	out    io.Writer
	env    *testenv.Env
	w      *workload
	fleet  *fleet
	in     *injector
	check  *checker
	events *eventLog
	report *Report
	gitea  *giteaSide
	flux   *flux.Controllers
	// stops end the servers the run started beside its parts.
	stops []func()
	// reportMu guards the report's fault figures, written by the fault loop and its recoveries.
	reportMu sync.Mutex
}

func (r *soakRun) recordFault(k FaultKind) {
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	r.report.Faults[k]++
}

func (r *soakRun) recordRecovery(d time.Duration) {
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	r.report.Recoveries = append(r.report.Recoveries, d)
}

// Run soaks, prints progress to out and returns the report.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	r := &soakRun{cfg: cfg, out: out, events: &eventLog{start: time.Now()}, report: &Report{Config: cfg, Faults: map[FaultKind]int{}}}
	defer r.stop()
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	r.say("running %s with %d strategies, seed %d", cfg.Duration, cfg.Strategies, cfg.Seed)
	defer r.finishReport()
	if err := r.soak(ctx); err != nil {
		return r.report, err
	}
	if err := r.settle(ctx); err != nil {
		return r.report, err
	}
	return r.report, nil
}

func (r *soakRun) say(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	r.events.add(line)
	fmt.Fprintf(r.out, "[soak %6.0fs] %s\n", time.Since(r.events.start).Seconds(), line)
}

func (r *soakRun) start(ctx context.Context) error {
	r.say("starting the local control plane")
	var opts testenv.Options
	if r.cfg.Flux {
		paths, err := flux.CRDPaths()
		if err != nil {
			return err
		}
		opts.CRDPaths = paths
	}
	env, err := testenv.Start(opts)
	if err != nil {
		return err
	}
	r.env = env
	for _, ns := range []string{"soak", "sluice-soak"} {
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	plain, err := startGitServer()
	if err != nil {
		return err
	}
	if r.cfg.Gitea {
		r.say("starting Gitea")
		if r.gitea, err = startGitea(ctx); err != nil {
			return err
		}
	}
	r.w = &workload{ns: "soak", seed: r.cfg.Seed, sluice: env.Sluice, kube: env.Kube, dyn: env.Dynamic, ops: &ops{},
		seq: map[string]int{}, repoOf: map[string]string{}, fixes: map[int]bool{}, written: map[string]int{}, gates: map[string]*gateLog{}}
	if r.cfg.Flux {
		r.say("starting the Flux source-controller and kustomize-controller")
		if err := r.startFlux(ctx); err != nil {
			return err
		}
	}
	if err := r.setUpStrategies(ctx, plain); err != nil {
		return err
	}
	if r.cfg.Releases {
		if err := r.w.setUpReleases(ctx, releaseCount(r.cfg.Strategies)); err != nil {
			return fmt.Errorf("set up the ManifestReleases: %w", err)
		}
	}
	api, err := r.apiProxy()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(r.cfg.LogDir, "kubeconfig")
	proxied := rest.CopyConfig(env.Config)
	proxied.Host = "https://" + api.addr()
	if err := testenv.WriteKubeconfig(proxied, kubeconfig); err != nil {
		return err
	}
	r.fleet = &fleet{binDir: r.cfg.BinDir, kubeconfig: kubeconfig, logDir: r.cfg.LogDir, leaseNamespace: "sluice-soak", importPoll: importPollInterval(r.cfg)}
	r.say("starting %d controllers with %d replicas each, logs in %s", len(controllers), replicasPerController, r.cfg.LogDir)
	if err := r.fleet.start(); err != nil {
		return err
	}
	r.in = &injector{fleet: r.fleet, api: api, git: plain.faults, events: r.events}
	if r.gitea != nil {
		r.in.gitea = r.gitea.faults
	}
	r.check = newChecker(r.w, r.events)
	return nil
}

// gitServer is the plain git server of a run, behind its fault proxy.
type gitServer struct {
	srv    *gittest.Server
	faults *gitFaults
	front  *httptest.Server
	root   string
}

func startGitServer() (*gitServer, error) {
	root, err := os.MkdirTemp("", "sluice-soak-git-")
	if err != nil {
		return nil, err
	}
	srv := gittest.StartServer(root)
	gf := &gitFaults{next: srv}
	return &gitServer{srv: srv, faults: gf, front: httptest.NewServer(gf), root: root}, nil
}

// newRepo creates an empty repository on the plain git server and opens it for the hydrator,
// through the proxy.
func (g *gitServer) newRepo(cache *git.Cache, name string) (*strategy, string, error) {
	if _, err := g.srv.InitRepo(name); err != nil {
		return nil, "", err
	}
	u := g.front.URL + "/" + name + ".git"
	repo, err := cache.Open(u, git.Auth{}, git.Options{})
	if err != nil {
		return nil, "", err
	}
	return &strategy{name: name, repo: repo, dir: filepath.Join(g.root, name+".git"), owner: "soak", provider: "plain-git"}, u, nil
}

// apiProxy puts the fault proxy in front of the API server's address.
func (r *soakRun) apiProxy() (*tcpProxy, error) {
	u, err := url.Parse(r.env.Config.Host)
	if err != nil {
		return nil, err
	}
	return newTCPProxy(u.Host)
}

func (r *soakRun) stop() {
	if r.fleet != nil {
		r.fleet.stop()
	}
	if r.in != nil {
		r.in.stop()
		r.in.api.close()
	}
	if r.flux != nil {
		_ = r.flux.Stop()
	}
	for _, stop := range r.stops {
		stop()
	}
	r.gitea.close()
	if r.env != nil {
		_ = r.env.Stop()
	}
}

// soak runs the workload and the faults for the configured duration.
func (r *soakRun) soak(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	defer cancel()
	undos := &undoList{}
	loops := []func(context.Context) error{
		r.every(r.cfg.HydrateEvery/time.Duration(max(1, r.cfg.Strategies)), r.hydrateNext()),
		r.every(time.Second, r.w.reportHealth),
		r.every(time.Minute/time.Duration(max(1, len(r.w.releases))), r.upgradeNext()),
		r.every(4*time.Second, r.people(undos)),
		r.every(time.Second, func(context.Context) error { undos.runDue(false); return nil }),
		r.every(10*time.Second, func(ctx context.Context) error { r.fleet.sampleAll(ctx); return nil }),
		r.every(2*time.Second, r.check.pass),
		r.every(30*time.Second, func(context.Context) error { return r.check.histories() }),
		r.faults,
	}
	errs := make(chan error, len(loops))
	for _, loop := range loops {
		go func() { errs <- loop(ctx) }()
	}
	var err error
	for range loops {
		if e := <-errs; e != nil && !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) {
			err = errors.Join(err, e)
		}
	}
	undos.runDue(true)
	return err
}

// every runs step every d until ctx ends; a failed step is counted, not fatal: the faults make
// the API server and git fail on purpose.
func (r *soakRun) every(d time.Duration, step func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				if err := step(ctx); err != nil && ctx.Err() == nil {
					r.w.ops.failed.Add(1)
				}
			}
		}
	}
}

func (r *soakRun) hydrateNext() func(context.Context) error {
	next := 0
	return func(ctx context.Context) error {
		s := r.w.strategy[next%len(r.w.strategy)]
		next++
		_, err := r.w.hydrate(ctx, s)
		return err
	}
}

func (r *soakRun) people(undos *undoList) func(context.Context) error {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0x9e0))
	return func(ctx context.Context) error { return r.w.person(ctx, rng, undos.add) }
}

// faults injects the schedule, and measures how long the controllers take to lead again
// after each fault.
func (r *soakRun) faults(ctx context.Context) error {
	start := time.Now()
	quiet := min(r.cfg.Duration/5, 2*time.Minute)
	schedule := Schedule(r.cfg.Seed, r.cfg.Duration, 30*time.Second, quiet, r.cfg.FaultEvery, len(controllers)*replicasPerController, r.gitea != nil)
	r.say("%d faults scheduled", len(schedule))
	for _, f := range schedule {
		if err := sleep(ctx, time.Until(start.Add(f.At))); err != nil {
			return err
		}
		if err := r.in.inject(ctx, f); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.say("fault %s could not be injected: %v", f, err)
			continue
		}
		r.recordFault(f.Kind)
		// Measured aside, so that a slow recovery does not push the schedule back.
		go func(ended time.Time) {
			if d, ok := r.recovered(ctx, ended); ok {
				r.recordRecovery(d)
			}
		}(time.Now())
	}
	<-ctx.Done()
	return ctx.Err()
}
