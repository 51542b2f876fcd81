package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// urgent is a Prioritizer whose priorities a test changes while keys wait.
type urgent struct {
	mu       sync.Mutex
	priority map[string]int
	order    []string
	started  chan struct{}
	release  chan struct{}
}

func (u *urgent) set(key string, p int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.priority[key] = p
}

func (u *urgent) Priority(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.priority[key]
}

func (u *urgent) Reconcile(_ context.Context, key string) (Result, error) {
	u.mu.Lock()
	u.order = append(u.order, key)
	first := len(u.order) == 1
	u.mu.Unlock()
	if first {
		// The first key holds the only worker until every other key is queued.
		u.started <- struct{}{}
		<-u.release
	}
	return Result{}, nil
}

// One worker busy while keys are queued: it then takes the urgent ones first, in the order they
// came, then the rest in theirs; a key whose priority rose while it waited (queued again) moves
// up, keeping its place among its new peers.
func TestUrgentKeysAreTakenFirstInTheOrderTheyCame(t *testing.T) {
	u := &urgent{priority: map[string]int{}, started: make(chan struct{}), release: make(chan struct{})}
	c := New("urgent", u, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()

	c.Enqueue("busy")
	<-u.started
	u.set("merge-1", 1)
	u.set("merge-2", 1)
	for _, k := range []string{"open-1", "merge-1", "open-2", "open-3", "merge-2"} {
		c.Enqueue(k)
	}
	u.set("open-3", 1)
	c.Enqueue("open-3")
	close(u.release)

	require.Eventually(t, func() bool { return c.Reconciled() == 6 }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, []string{"busy", "merge-1", "open-3", "merge-2", "open-1", "open-2"}, u.order,
		"urgent first: merge-1 and open-3 came before merge-2 (open-3 was queued before it)")
}

func TestPriorityQueueIsFirstInFirstOutWithinAPriority(t *testing.T) {
	prio := map[string]int{"a": 0, "b": 2, "c": 0, "d": 2, "e": 1}
	q := newPriorityQueue(func(k string) int { return prio[k] })
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		q.Push(k)
	}
	prio["c"] = 3
	q.Touch("c")
	q.Touch("not-queued")
	var out []string
	for q.Len() > 0 {
		out = append(out, q.Pop())
	}
	assert.Equal(t, []string{"c", "b", "d", "e", "a"}, out)
	assert.Empty(t, q.index, "nothing is kept for a key that left")
}

// exclusive records reconciles and fails the test if two run for one key at once.
type exclusive struct {
	t        *testing.T
	mu       sync.Mutex
	running  map[string]bool
	done     int
	priority func(string) int
}

func (e *exclusive) Priority(key string) int { return e.priority(key) }

func (e *exclusive) Reconcile(_ context.Context, key string) (Result, error) {
	e.mu.Lock()
	if e.running[key] {
		e.t.Errorf("%s reconciled twice at once", key)
	}
	e.running[key] = true
	e.mu.Unlock()
	time.Sleep(50 * time.Microsecond)
	e.mu.Lock()
	e.running[key] = false
	e.done++
	e.mu.Unlock()
	return Result{}, nil
}

// Keys queued again while they wait or run, with priorities that change meanwhile, are never
// reconciled by two workers at once, and none is lost.
func TestPriorityQueueNeverHandsOutAKeyTwice(t *testing.T) {
	var flip sync.Map
	e := &exclusive{t: t, running: map[string]bool{}, priority: func(k string) int {
		v, _ := flip.Load(k)
		n, _ := v.(int)
		return n
	}}
	c := New("exclusive", e, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 8) }()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := fmt.Sprintf("ns/k%d", (i*7+g)%23)
				flip.Store(k, (i+g)%3)
				c.Enqueue(k)
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return c.queue.Len() == 0 }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	e.mu.Lock()
	defer e.mu.Unlock()
	assert.Positive(t, e.done)
	for k, r := range e.running {
		assert.False(t, r, "%s still running", k)
	}
}
