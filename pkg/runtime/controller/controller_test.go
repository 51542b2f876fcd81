package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"

	"github.com/sluicehq/sluice/pkg/runtime/metrics"
)

// script answers each reconcile of a key with the next scripted step and records the calls.
type script struct {
	mu    sync.Mutex
	steps map[string][]func() (Result, error)
	calls map[string][]time.Time
	done  chan string
}

func newScript() *script {
	return &script{steps: map[string][]func() (Result, error){}, calls: map[string][]time.Time{}, done: make(chan string, 100)}
}

func (s *script) Reconcile(_ context.Context, key string) (Result, error) {
	s.mu.Lock()
	s.calls[key] = append(s.calls[key], time.Now())
	steps := s.steps[key]
	var step func() (Result, error)
	if len(steps) > 0 {
		step, s.steps[key] = steps[0], steps[1:]
	}
	s.mu.Unlock()
	defer func() { s.done <- key }()
	if step == nil {
		return Result{}, nil
	}
	return step()
}

func (s *script) callCount(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls[key])
}

func run(t *testing.T, s *script) (*Controller, *metrics.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	c := New("unit", s, Options{
		Metrics:     reg,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 50*time.Millisecond),
	})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		assert.NoError(t, c.Run(ctx, 2))
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	return c, reg
}

func waitCalls(t *testing.T, s *script, key string, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for s.callCount(key) < n {
		select {
		case <-s.done:
		case <-deadline:
			t.Fatalf("key %s reconciled %d times, want %d", key, s.callCount(key), n)
		}
	}
}

func TestErrorsAreRetriedWithBackoffUntilSuccess(t *testing.T) {
	s := newScript()
	fail := func() (Result, error) { return Result{}, errors.New("apiserver unavailable") }
	s.steps["ns/a"] = []func() (Result, error){fail, fail, fail}
	c, reg := run(t, s)
	c.Enqueue("ns/a")
	waitCalls(t, s, "ns/a", 4)

	s.mu.Lock()
	calls := s.calls["ns/a"]
	s.mu.Unlock()
	// Backoff doubles: the gap before the third retry is longer than before the first.
	assert.Greater(t, calls[3].Sub(calls[2]), calls[1].Sub(calls[0]))
	assert.Equal(t, 3.0, testutil.ToFloat64(reg.Reconcile.Total.WithLabelValues("unit", metrics.ResultError)))
	assert.Eventually(t, func() bool {
		return testutil.ToFloat64(reg.Reconcile.Total.WithLabelValues("unit", metrics.ResultSuccess)) == 1
	}, 5*time.Second, 10*time.Millisecond)
}

func TestPanicsAreRecoveredAndRetried(t *testing.T) {
	s := newScript()
	s.steps["ns/p"] = []func() (Result, error){func() (Result, error) { panic("nil map write") }}
	c, reg := run(t, s)
	c.Enqueue("ns/p")
	waitCalls(t, s, "ns/p", 2)
	assert.Equal(t, 1.0, testutil.ToFloat64(reg.Reconcile.Total.WithLabelValues("unit", metrics.ResultPanic)))
}

// In a synctest bubble time is the bubble's own: an hour passes at once, and synctest.Wait
// returns when every goroutine of the controller is idle, so "never again" is checked exactly.
func TestPermanentErrorsAreNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript()
		s.steps["ns/bad"] = []func() (Result, error){func() (Result, error) {
			return Result{}, Permanent(errors.New("invalid cron schedule"))
		}}
		c, _ := run(t, s)
		c.Enqueue("ns/bad")
		synctest.Wait()
		require.Equal(t, 1, s.callCount("ns/bad"))
		time.Sleep(time.Hour) // far beyond the longest backoff
		synctest.Wait()
		assert.Equal(t, 1, s.callCount("ns/bad"))
		assert.Equal(t, int64(1), c.Reconciled())
	})
}

func TestRequeueAfterComesBackAfterTheDelay(t *testing.T) {
	s := newScript()
	delay := 150 * time.Millisecond
	s.steps["ns/w"] = []func() (Result, error){func() (Result, error) { return Result{RequeueAfter: delay}, nil }}
	c, _ := run(t, s)
	c.Enqueue("ns/w")
	waitCalls(t, s, "ns/w", 2)
	s.mu.Lock()
	gap := s.calls["ns/w"][1].Sub(s.calls["ns/w"][0])
	s.mu.Unlock()
	assert.GreaterOrEqual(t, gap, delay)
}

func TestDuplicateKeysCollapse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript()
		block := make(chan struct{})
		s.steps["ns/busy"] = []func() (Result, error){func() (Result, error) { <-block; return Result{}, nil }}
		c, _ := run(t, s)
		c.Enqueue("ns/busy")
		synctest.Wait()
		require.Equal(t, 1, s.callCount("ns/busy"))
		for range 10 {
			c.Enqueue("ns/busy")
		}
		close(block)
		synctest.Wait()
		assert.Equal(t, 2, s.callCount("ns/busy"), "ten adds while busy collapse into one more reconcile")
		assert.Equal(t, int64(2), c.Reconciled())
	})
}

// observed records what an Observer is told, in order.
type observed struct {
	mu     sync.Mutex
	events []string
}

func (o *observed) add(e string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}
func (o *observed) Enqueued(c, key string)         { o.add("enqueued " + c + " " + key) }
func (o *observed) Started(c, key string)          { o.add("started " + c + " " + key) }
func (o *observed) Finished(c, key, result string) { o.add("finished " + c + " " + key + " " + result) }

// The Observer sees each enqueue, and each reconcile's start and end with its result; an enqueue
// while the key is being reconciled is followed by one more reconcile.
func TestTheObserverSeesEnqueuesAndReconciles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScript()
		block := make(chan struct{})
		s.steps["ns/a"] = []func() (Result, error){func() (Result, error) { <-block; return Result{}, nil }}
		o := &observed{}
		c := New("unit", s, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: o})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = c.Run(ctx, 1) }()
		c.Enqueue("ns/a")
		synctest.Wait()
		c.Enqueue("ns/a")
		close(block)
		synctest.Wait()
		assert.Equal(t, []string{
			"enqueued unit ns/a", "started unit ns/a", "enqueued unit ns/a", "finished unit ns/a success",
			"started unit ns/a", "finished unit ns/a success",
		}, o.events)
	})
}
