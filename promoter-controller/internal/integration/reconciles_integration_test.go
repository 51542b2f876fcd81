package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
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
// means to exercise. The events of one informer reach its handlers in order: once a sentinel
// strategy created now is enqueued, every earlier event of "app" (its last status write
// included) was enqueued before it, and app is settled when that was reconciled, unless the
// reconcile wrote again: then it settles again.
func (f *fixture) settle(m *manager.Manager) {
	f.t.Helper()
	r := observed(m)
	for {
		before := f.appVersion()
		mark := r.mark()
		sentinel := fmt.Sprintf("sentinel-%d", sentinels.Add(1))
		_, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, &promoterv1alpha1.PromotionStrategy{
			// Suspended, it reads nothing: a sentinel only.
			ObjectMeta: metav1.ObjectMeta{Name: sentinel, Annotations: map[string]string{suspend.Annotation: "test sentinel"}},
			Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "none"}, DryBranch: "main",
				Environments: []promoterv1alpha1.Environment{{Branch: "dev"}}},
		}, metav1.CreateOptions{})
		require.NoError(f.t, err)
		sentinelKey, appKey := f.ns+"/"+sentinel, f.ns+"/app"
		require.NoError(f.t, testenv.Wait(f.ctx, 60*time.Second, func(context.Context) (bool, error) {
			return r.enqueuedSince(mark, "promotionstrategy", sentinelKey) && r.idle("promotionstrategy", appKey), nil
		}), "strategy %s settled", appKey)
		if f.appVersion() == before {
			return
		}
	}
}

func (f *fixture) appVersion() string {
	f.t.Helper()
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{})
	require.NoError(f.t, err)
	return ps.ResourceVersion
}
