package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, &env)
}

// startPromoter runs the controller in-process against the control plane, as cfg's identity,
// until the returned function is called (or the test ends).
func startPromoter(t testing.TB, cfg *rest.Config, cacheDir string) (stop func()) {
	t.Helper()
	return startPromoterWith(t, cfg, setup.Config{CacheDir: cacheDir})
}

func startPromoterWith(t testing.TB, cfg *rest.Config, pcfg setup.Config) (stop func()) {
	t.Helper()
	return startPromoterOpts(t, cfg, pcfg, nil)
}

// startPromoterOpts starts a promoter whose shared flags mutate may change.
func startPromoterOpts(t testing.TB, cfg *rest.Config, pcfg setup.Config, mutate func(*options.Options)) (stop func()) {
	t.Helper()
	_, stop = startPromoterManager(t, cfg, pcfg, mutate)
	return stop
}

// webhookConfig is a promoter configuration with the webhook receiver on a free loopback port,
// and that port's address.
func webhookConfig(t testing.TB, cacheDir string) (setup.Config, net.Addr) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return setup.Config{CacheDir: cacheDir, WebhookListener: ln}, ln.Addr()
}

// startPromoterManager is startPromoterOpts that also returns the manager, for its metrics and
// its record of reconciles (observed).
func startPromoterManager(t testing.TB, cfg *rest.Config, pcfg setup.Config, mutate func(*options.Options)) (m *manager.Manager, stop func()) {
	t.Helper()
	return startPromoterLogging(t, cfg, pcfg, mutate, slog.NewTextHandler(io.Discard, nil))
}

// startPromoterLogging is startPromoterManager whose log goes to logs.
func startPromoterLogging(t testing.TB, cfg *rest.Config, pcfg setup.Config, mutate func(*options.Options), logs slog.Handler) (m *manager.Manager, stop func()) {
	t.Helper()
	opts := options.Defaults("promoter-controller")
	opts.MetricsBindAddress = "127.0.0.1:0"
	opts.HealthProbeBindAddress = "127.0.0.1:0"
	opts.LeaderElect = false
	if mutate != nil {
		mutate(&opts)
	}
	panics := &panicCounter{Handler: logs}
	log := slog.New(panics)
	var err error
	m, err = manager.New("promoter-controller", opts, cfg, log)
	require.NoError(t, err)
	m.Observer = &reconciles{}
	require.NoError(t, setup.Setup(m, pcfg))
	stopManager := testenv.RunManager(t, m)
	stop = func() {
		stopManager()
		assert.Zero(t, panics.count.Load(), "reconciles panicked")
	}
	t.Cleanup(stop)
	return m, stop
}

// fixture is a namespace with a git repository served over HTTP by the test, a ScmRepository and
// a plain git ScmProvider.
type fixture struct {
	t    *testing.T
	ns   string
	srv  *gittest.Server
	repo *gittest.Repo
	ctx  context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testenv.SkipIfShort(t)
	f := &fixture{t: t, ctx: context.Background(), ns: fmt.Sprintf("p-%d", time.Now().UnixNano())}
	require.NoError(t, createNamespace(f.ctx, f.ns))
	f.srv = gittest.NewServer(t)
	f.repo = f.srv.CreateRepo(t, "app")
	require.NoError(t, createPlainGitRepo(f.ctx, f.ns, "app", f.srv.URL("app")))
	return f
}

func createNamespace(ctx context.Context, ns string) error {
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	return err
}

// createPlainGitRepo creates a plain git ScmProvider "git" and a ScmRepository name at url.
func createPlainGitRepo(ctx context.Context, ns, name, url string) error {
	_, err := env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"},
		Spec:       scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: url, AllowInsecureLoopbackHTTP: true,
			ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Owner: "acme", Name: "app",
		},
	}, metav1.CreateOptions{})
	return err
}

// dryCommit adds a commit to the dry branch.
func (f *fixture) dryCommit(msg string) string {
	return f.repo.CommitFiles(f.t, "main", map[string]string{"values.yaml": "msg: " + msg + "\n"}, msg)
}

// hydrate renders dry onto <env>-next, on top of <env>, as a hydrator would (with a note).
func (f *fixture) hydrate(dry string, envs ...string) map[string]string {
	out := map[string]string{}
	for _, e := range envs {
		out[e] = f.hydrateUnannounced(dry, e)
	}
	// Plain git sends no webhooks: a hydrator's CI asks for a refresh (once a strategy exists).
	if _, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{}); err == nil {
		f.refresh("hydrated " + dry)
	}
	return out
}

func hydratorNote(dry string) []byte { return []byte(fmt.Sprintf(`{"drySha":%q}`, dry)) }

// bootstrap puts every environment branch on a first dry commit.
func (f *fixture) bootstrap(envs ...string) string {
	d0 := f.dryCommit("initial")
	for _, e := range envs {
		sha := f.repo.CommitFiles(f.t, e, map[string]string{"hydrator.metadata": string(hydratorNote(d0)), "manifest.yaml": "env: " + e + "\n"}, "initial "+e)
		_ = sha
	}
	return d0
}

func (f *fixture) strategy(mutate func(*promoterv1alpha1.PromotionStrategySpec)) *promoterv1alpha1.PromotionStrategy {
	ps := &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef:        promoterv1alpha1.LocalReference{Name: "app"},
			DryBranch:            "main",
			ActiveCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "health"}},
			Environments:         []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "staging"}, {Branch: "prod"}},
		},
	}
	if mutate != nil {
		mutate(&ps.Spec)
	}
	created, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, ps, metav1.CreateOptions{})
	require.NoError(f.t, err)
	return created
}

func (f *fixture) setStatus(key, sha string, phase commitstatusv1alpha1.CommitStatusPhase) {
	name := key + "-" + sha[:10]
	_, err := testenv.Update(f.ctx, env.Sluice.CommitstatusV1alpha1().CommitStatuses(f.ns), name, func(cs *commitstatusv1alpha1.CommitStatus) {
		cs.Spec.Phase = phase
	})
	if err == nil {
		return
	}
	_, err = env.Sluice.CommitstatusV1alpha1().CommitStatuses(f.ns).Create(f.ctx, &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{commitstatusv1alpha1.KeyLabel: key}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"}, SHA: sha, Name: key, Phase: phase,
		},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

// envStatus waits until cond holds for environment branch and returns its status.
func (f *fixture) waitEnv(branch string, what string, cond func(promoterv1alpha1.EnvironmentStatus) bool) promoterv1alpha1.EnvironmentStatus {
	f.t.Helper()
	return f.waitEnvWithin(60*time.Second, branch, what, cond)
}

// waitEnvWithin is waitEnv with its own timeout.
func (f *fixture) waitEnvWithin(timeout time.Duration, branch string, what string, cond func(promoterv1alpha1.EnvironmentStatus) bool) promoterv1alpha1.EnvironmentStatus {
	f.t.Helper()
	last, err := testenv.WaitEnvironment(f.ctx, timeout, env.Sluice, f.ns, "app", branch, cond)
	require.NoError(f.t, err, "%s: %s; last status %+v", branch, what, last)
	return last
}

func blockedBy(text string) func(promoterv1alpha1.EnvironmentStatus) bool {
	return func(e promoterv1alpha1.EnvironmentStatus) bool { return strings.Contains(e.Blocked, text) }
}

func (f *fixture) setGate(name string, open bool) {
	g, err := env.Sluice.GatingV1alpha1().Gates(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		g, err = env.Sluice.GatingV1alpha1().Gates(f.ns).Create(f.ctx, &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gatingv1alpha1.GateSpec{Closed: !open}}, metav1.CreateOptions{})
		require.NoError(f.t, err)
	}
	// The gate-controller's part, written directly: the promoter only reads Gate status.
	status := metav1.ConditionFalse
	if open {
		status = metav1.ConditionTrue
	}
	g.Status.ObservedGeneration = g.Generation
	g.Status.Open = open
	g.Status.Conditions = []metav1.Condition{{Type: gatingv1alpha1.ConditionOpen, Status: status, Reason: gatingv1alpha1.ReasonManual, LastTransitionTime: metav1.Now(), ObservedGeneration: g.Generation}}
	_, err = env.Sluice.GatingV1alpha1().Gates(f.ns).UpdateStatus(f.ctx, g, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

func (f *fixture) pullRequests() []promoterv1alpha1.PullRequest {
	list, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).List(f.ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	return list.Items
}

func (f *fixture) events(reason string) []corev1.Event {
	list, err := env.Kube.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	require.NoError(f.t, err)
	return list.Items
}

// A change goes dev -> staging -> prod, held by a failing status, then by a closed gate.
func TestPromotionThroughThreeEnvironments(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev", "staging", "prod")
	f.setGate("prod-freeze", false)
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments[2].Gates = &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "prod-freeze"}}}
	})
	startPromoter(t, env.Config, t.TempDir())

	d1 := f.dryCommit("bump image to 1.1")
	f.hydrate(d1, "dev", "staging", "prod")

	dev := f.waitEnv("dev", "promoted to d1", testenv.PromotedTo(d1))
	require.Len(t, dev.History, 1)
	assert.Equal(t, d1, dev.History[0].DrySHA)
	assert.Equal(t, "bump image to 1.1", dev.Active.Subject)
	assert.Equal(t, dev.Active.HydratedSHA, f.repo.Branch(t, "dev"))

	// Rule 3: staging waits for dev's active health check: missing, then failing, then passing.
	f.waitEnv("staging", "blocked by dev's missing health", blockedBy("health on dev is missing"))
	f.setStatus("health", dev.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusFailure)
	f.waitEnv("staging", "blocked by dev's failing health", blockedBy("health on dev is failure"))
	assert.Equal(t, d1, dev.Active.DrySHA)
	f.setStatus("health", dev.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusSuccess)
	staging := f.waitEnv("staging", "promoted to d1", testenv.ActiveOn(d1))

	// The closed gate holds prod even with staging healthy; opening it releases prod.
	f.setStatus("health", staging.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusSuccess)
	f.waitEnv("prod", "held by the gate", blockedBy("prod-freeze"))
	prod := f.waitEnv("prod", "still on d0", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA != d1 })
	assert.Empty(t, prod.History)
	f.setGate("prod-freeze", true)
	prod = f.waitEnv("prod", "promoted to d1", testenv.PromotedTo(d1))
	require.Len(t, prod.History, 1)

	// One pull request per environment, each merged once by Sluice.
	prs := f.pullRequests()
	require.Len(t, prs, 3)
	for _, pr := range prs {
		assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Status.State, pr.Name)
		assert.False(t, pr.Status.MergedExternally, pr.Name)
	}
	staging = f.waitEnv("staging", "recorded healthy", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return len(e.LastHealthyDrySHAs) > 0 && e.LastHealthyDrySHAs[0].SHA == d1
	})
	require.NoError(t, testenv.Wait(f.ctx, 20*time.Second, func(context.Context) (bool, error) {
		return len(f.events(promotionstrategy.EventPromotionCompleted)) >= 3 && len(f.events(promotionstrategy.EventPromotionBlocked)) >= 2, nil
	}))
	proposed, err := env.Sluice.PromoterV1alpha1().ProposedCommits(f.ns).List(f.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, proposed.Items, 3)
}

// panicCounter counts the runner's "reconcile panicked" records: the runner recovers panics, and
// a test must still fail on one.
type panicCounter struct {
	slog.Handler
	count atomic.Int64
}

func (h *panicCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "reconcile panicked" {
		h.count.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *panicCounter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &panicCounterChild{parent: h, Handler: h.Handler.WithAttrs(attrs)}
}

func (h *panicCounter) WithGroup(name string) slog.Handler {
	return &panicCounterChild{parent: h, Handler: h.Handler.WithGroup(name)}
}

type panicCounterChild struct {
	slog.Handler
	parent *panicCounter
}

func (h *panicCounterChild) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "reconcile panicked" {
		h.parent.count.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *panicCounterChild) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &panicCounterChild{parent: h.parent, Handler: h.Handler.WithAttrs(attrs)}
}

func (h *panicCounterChild) WithGroup(name string) slog.Handler {
	return &panicCounterChild{parent: h.parent, Handler: h.Handler.WithGroup(name)}
}
