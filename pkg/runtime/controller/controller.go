// Package controller is the one queue runner every Sluice reconciler runs in: a typed
// rate-limiting workqueue keyed by "namespace/name", a fixed pool of workers, requeue-after for
// time-driven work, bounded exponential backoff on errors, recovery from panics, and urgent keys
// first for a Reconciler that is a Prioritizer.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/sluicehq/sluice/pkg/runtime/metrics"
)

// Result tells the runner when to look at a key again. The zero value means "only on the next event".
type Result struct {
	// RequeueAfter > 0 schedules the key again after this long. Use it only where time matters:
	// windows, intervals, soak times.
	RequeueAfter time.Duration
}

// Reconciler converges one object, named by its "namespace/name" key, toward its spec.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcilerFunc adapts a function to Reconciler.
type ReconcilerFunc func(ctx context.Context, key string) (Result, error)

// Reconcile calls f.
func (f ReconcilerFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

// Options tune a Controller. Zero values take sensible defaults.
type Options struct {
	// Metrics receives workqueue and reconcile metrics. Nil disables them.
	Metrics *metrics.Registry
	// Logger defaults to slog.Default.
	Logger *slog.Logger
	// RateLimiter defaults to DefaultRateLimiter.
	RateLimiter workqueue.TypedRateLimiter[string]
	// Observer, if set, is told of every key enqueued and reconciled.
	Observer Observer
	// ShutdownGracePeriod is how long a reconcile in flight may run on once Run's context ends,
	// unless it ends with ErrOwnershipLost. Zero cancels reconciles in flight at once.
	ShutdownGracePeriod time.Duration
}

// ErrOwnershipLost, as the cause that ends Run's context, cancels the reconciles in flight at once
// instead of letting them finish: another process works the same keys now (a lost Lease).
var ErrOwnershipLost = errors.New("another process reconciles these objects now")

// Observer is told what a Controller does with each key, so that a test waits for the reconcile
// an event brings instead of sleeping, and knows for sure that an event brought none. Calls come
// from the goroutine that enqueued or reconciled the key, and must return quickly.
type Observer interface {
	// Enqueued: Enqueue is adding key (it may be queued already); told before the add, so it
	// always comes before the Started of the reconcile the add brings.
	Enqueued(controller, key string)
	// Started: a worker took key from the queue; it reads the cache from now on.
	Started(controller, key string)
	// Finished: the reconcile of key ended with result, one of the metrics.Result* values.
	Finished(controller, key, result string)
}

// Controller runs a Reconciler over a workqueue.
type Controller struct {
	name       string
	reconciler Reconciler
	queue      workqueue.TypedRateLimitingInterface[string]
	log        *slog.Logger
	metrics    *metrics.ReconcileMetrics
	observer   Observer
	grace      time.Duration

	mu        sync.Mutex
	hasSynced []cache.InformerSynced
	// reconciled counts finished reconciles, whatever their outcome.
	reconciled atomic.Int64
}

// DefaultRateLimiter backs off per key from 50ms to 5 minutes, so a persistent error can never
// become a hot loop, and caps the whole queue at 20 retries per second with bursts of 200.
func DefaultRateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(20), 200)},
	)
}

// New returns a Controller named name; the name labels its metrics and logs.
func New(name string, r Reconciler, opts Options) *Controller {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = DefaultRateLimiter()
	}
	cfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: name}
	c := &Controller{name: name, reconciler: r, log: opts.Logger.With("controller", name), observer: opts.Observer, grace: opts.ShutdownGracePeriod}
	if opts.Metrics != nil {
		cfg.MetricsProvider = opts.Metrics.Workqueue
		c.metrics = opts.Metrics.Reconcile
	}
	if p, ok := r.(Prioritizer); ok {
		cfg.DelayingQueue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
			Name: name, MetricsProvider: cfg.MetricsProvider,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{
				Name: name, MetricsProvider: cfg.MetricsProvider, Queue: newPriorityQueue(p.Priority),
			}),
		})
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter, cfg)
	return c
}

// Name returns the controller's name.
func (c *Controller) Name() string { return c.name }

// Reconciled returns how many reconciles have finished, whatever their outcome: a test waits for
// it to grow past the count it read before a change, instead of sleeping for a reconcile to end.
func (c *Controller) Reconciled() int64 { return c.reconciled.Load() }

// Enqueue schedules key now. Duplicate keys collapse into one reconcile.
func (c *Controller) Enqueue(key string) {
	if c.observer != nil {
		c.observer.Enqueued(c.name, key)
	}
	c.queue.Add(key)
}

// EnqueueAfter schedules key after d.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.queue.AddAfter(key, d) }

// WaitFor adds informers whose caches must be synced before workers start.
func (c *Controller) WaitFor(synced ...cache.InformerSynced) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hasSynced = append(c.hasSynced, synced...)
}

// Run waits for caches, then processes keys with workers goroutines until ctx is done. It returns
// once every worker has finished its current item.
//
// A reconcile runs on a context of its own, which outlives ctx by the shutdown grace period:
// cancelled halfway, a call to an SCM (a merge, a push) can take effect while its reply is lost,
// and the next owner of the key then finds a state no reconcile recorded. Once ctx is done no new
// key is taken, so a graceful stop waits for at most one reconcile per worker.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if workers < 1 {
		workers = 1
	}
	c.mu.Lock()
	synced := append([]cache.InformerSynced(nil), c.hasSynced...)
	c.mu.Unlock()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("controller %s: caches did not sync before shutdown", c.name)
	}
	c.log.Info("starting workers", "workers", workers)

	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx, workCtx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	if cause := context.Cause(ctx); errors.Is(cause, ErrOwnershipLost) || c.grace <= 0 {
		c.log.Info("stopping workers; cancelling reconciles in flight", "cause", cause)
		cancelWork()
	} else {
		c.log.Info("stopping workers; reconciles in flight may finish", "gracePeriod", c.grace)
		defer time.AfterFunc(c.grace, cancelWork).Stop()
	}
	wg.Wait()
	return nil
}

// processNext reconciles the next key on workCtx, unless ctx is done: a queue being shut down
// still hands out the keys it holds, and a stopping worker takes none of them.
func (c *Controller) processNext(ctx, workCtx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		return false
	}
	if c.observer != nil {
		c.observer.Started(c.name, key)
	}

	start := time.Now()
	res, err := c.safeReconcile(workCtx, key)
	outcome := c.handle(key, res, err)
	c.reconciled.Add(1)
	if c.metrics != nil {
		c.metrics.Total.WithLabelValues(c.name, outcome).Inc()
		c.metrics.Duration.WithLabelValues(c.name).Observe(time.Since(start).Seconds())
	}
	if c.observer != nil {
		c.observer.Finished(c.name, key, outcome)
	}
	return true
}

func (c *Controller) handle(key string, res Result, err error) string {
	var panicked *panicError
	switch {
	case errors.As(err, &panicked):
		c.log.Error("reconcile panicked", "key", key, "panic", panicked.value, "stack", panicked.stack)
		c.queue.AddRateLimited(key)
		return metrics.ResultPanic
	case IsPermanent(err):
		// Retrying cannot help; the reconciler has reported it in status. A spec change brings the key back.
		c.log.Info("reconcile failed permanently; waiting for a change", "key", key, "error", err)
		c.queue.Forget(key)
		return metrics.ResultError
	case err != nil:
		c.log.Info("reconcile failed; retrying with backoff", "key", key, "error", err, "retries", c.queue.NumRequeues(key))
		c.queue.AddRateLimited(key)
		return metrics.ResultError
	case res.RequeueAfter > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, res.RequeueAfter)
		return metrics.ResultRequeue
	default:
		c.queue.Forget(key)
		return metrics.ResultSuccess
	}
}

func (c *Controller) safeReconcile(ctx context.Context, key string) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: string(debug.Stack())}
		}
	}()
	return c.reconciler.Reconcile(ctx, key)
}

type panicError struct {
	value any
	stack string
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }
