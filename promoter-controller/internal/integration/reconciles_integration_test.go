package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/metrics"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
)

// reconciles records, in order, what the promoter's controllers did with each key (it is the
// manager's controller.Observer), so a test waits on that instead of sleeping.
type reconciles struct {
	mu    sync.Mutex
	steps []step
}

type step struct{ what, controller, key, result string }

func (r *reconciles) add(s step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, s)
}

func (r *reconciles) Enqueued(c, key string) { r.add(step{what: "enqueued", controller: c, key: key}) }
func (r *reconciles) Started(c, key string)  { r.add(step{what: "started", controller: c, key: key}) }
func (r *reconciles) Finished(c, key, result string) {
	r.add(step{what: "finished", controller: c, key: key, result: result})
}

// mark is the position of the next step: the steps at or after it happened after the call.
func (r *reconciles) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.steps)
}

// enqueuedSince reports whether c enqueued key at or after mark.
func (r *reconciles) enqueuedSince(mark int, c, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.steps[mark:], func(s step) bool { return s.what == "enqueued" && s.controller == c && s.key == key })
}

// idle reports whether c has nothing pending for key: it was reconciled, not since enqueued
// again, and the last reconcile did not fail (a failure is retried with backoff, unseen here).
func (r *reconciles) idle(c, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pending, running, done bool
	var result string
	for _, s := range r.steps {
		if s.controller != c || s.key != key {
			continue
		}
		switch s.what {
		case "enqueued":
			pending = true
		case "started":
			pending, running = false, true
		case "finished":
			running, done, result = false, true, s.result
		}
	}
	return done && !pending && !running && result != metrics.ResultError && result != metrics.ResultPanic
}

func observed(m *manager.Manager) *reconciles { return m.Observer.(*reconciles) }

var sentinels atomic.Int64

// settle waits until the strategy "app" has nothing pending: no reconcile running or queued, and
// none still to come from an event so far. A status write wakes its strategy once more, and that
// reconcile reads git, so a change made before it ends could be seen without the trigger a test
// means to exercise.
//
// Each informer that can wake a strategy hands its events to its handlers in order, but the
// informers run apart: the ScmRepository or ScmProvider of app, listed when the controller
// started, can reach its handler after app's own status writes. So settle first writes a marker
// through each of the others (fenceInformers), then one through the strategies' own: a new
// sentinel strategy. Once a marker wakes its sentinel, every earlier event of that informer, about
// app's objects too, was handled. App is settled when, after all of them, it was reconciled and
// not woken since, unless that reconcile wrote again: then it settles again.
//
// Gates, RevertCommits and PullRequests wake a strategy only through one that names it or that it
// owns; the tests that settle have none of those for app before they act.
func (f *fixture) settle(m *manager.Manager) {
	f.t.Helper()
	r := observed(m)
	f.fenceInformers(r)
	for {
		before := f.appVersion()
		f.sentinelStrategy(r, "none")
		appKey := f.ns + "/app"
		require.NoError(f.t, testenv.Wait(f.ctx, 60*time.Second, func(context.Context) (bool, error) {
			return r.idle("promotionstrategy", appKey), nil
		}), "strategy %s settled", appKey)
		if f.appVersion() == before {
			return
		}
	}
}

// sentinelStrategy creates a suspended strategy, which reads nothing, on ScmRepository repo (its
// own name when repo is ""), and waits until it is enqueued: then every earlier event of the
// strategies' informer was handled. It returns the sentinel's name.
func (f *fixture) sentinelStrategy(r *reconciles, repo string) string {
	f.t.Helper()
	name := fmt.Sprintf("sentinel-%d", sentinels.Add(1))
	if repo == "" {
		repo = name
	}
	f.marker(r, name, func() error {
		_, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, &promoterv1alpha1.PromotionStrategy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{suspend.Annotation: "test sentinel"}},
			Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: repo}, DryBranch: "main",
				Environments: []promoterv1alpha1.Environment{{Branch: "dev"}}},
		}, metav1.CreateOptions{})
		return err
	})
	return name
}

// fenceInformers writes, through each informer other than the strategies' own that wakes
// strategies, an object that wakes a sentinel strategy, and waits for that: an ScmRepository and
// an ScmProvider of the sentinel's name (the provider's event reaches the strategy through the
// repository, read first), and a CommitStatus of that repository. The sentinel writes its status
// once (suspended); that write is fenced first, so that only the markers wake it afterwards.
func (f *fixture) fenceInformers(r *reconciles) {
	f.t.Helper()
	sentinel := f.sentinelStrategy(r, "")
	require.NoError(f.t, testenv.Wait(f.ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, sentinel, metav1.GetOptions{})
		return err == nil && ps.Status.ObservedGeneration == ps.Generation, err
	}), "sentinel %s reported suspended", sentinel)
	f.sentinelStrategy(r, "none")
	scm := env.Sluice.ScmV1alpha1()
	f.marker(r, sentinel, func() error {
		_, err := scm.ScmRepositories(f.ns).Create(f.ctx, &scmv1alpha1.ScmRepository{
			ObjectMeta: metav1.ObjectMeta{Name: sentinel},
			Spec: scmv1alpha1.ScmRepositorySpec{URL: "http://127.0.0.1:1/" + sentinel, AllowInsecureLoopbackHTTP: true,
				ProviderRef: scmv1alpha1.LocalObjectReference{Name: sentinel}, Owner: "sentinels", Name: sentinel},
		}, metav1.CreateOptions{})
		return err
	})
	f.marker(r, sentinel, func() error {
		_, err := scm.ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
			ObjectMeta: metav1.ObjectMeta{Name: sentinel},
			Spec:       scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
		}, metav1.CreateOptions{})
		return err
	})
	f.marker(r, sentinel, func() error {
		_, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(f.ns).Create(f.ctx, &commitstatusv1alpha1.CommitStatus{
			ObjectMeta: metav1.ObjectMeta{Name: sentinel},
			Spec: commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: sentinel},
				SHA: strings.Repeat("0", 40), Name: "sentinel", Phase: commitstatusv1alpha1.CommitStatusPending},
		}, metav1.CreateOptions{})
		return err
	})
}

// marker makes write, and waits until the promotionstrategy controller enqueues namespace/sentinel
// after it.
func (f *fixture) marker(r *reconciles, sentinel string, write func() error) {
	f.t.Helper()
	mark := r.mark()
	require.NoError(f.t, write())
	key := f.ns + "/" + sentinel
	require.NoError(f.t, testenv.Wait(f.ctx, 60*time.Second, func(context.Context) (bool, error) {
		return r.enqueuedSince(mark, "promotionstrategy", key), nil
	}), "marker for %s seen", key)
}

func (f *fixture) appVersion() string {
	f.t.Helper()
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{})
	require.NoError(f.t, err)
	return ps.ResourceVersion
}
