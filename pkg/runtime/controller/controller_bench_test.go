package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"k8s.io/client-go/util/workqueue"

	"github.com/sluicehq/sluice/pkg/runtime/metrics"
)

// The runner's cost per key (metrics, panic recovery, result handling) beside a baseline: a bare
// client-go workqueue drained by the same number of workers, as sample-controller does.
const benchWorkers = 2

func BenchmarkRunnerThroughput(b *testing.B) {
	var wg sync.WaitGroup
	c := New("bench", ReconcilerFunc(func(context.Context, string) (Result, error) {
		wg.Done()
		return Result{}, nil
	}), Options{Metrics: metrics.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx, benchWorkers); close(done) }()
	// Measure steady state: wait until the workers run before starting the clock.
	wg.Add(1)
	c.Enqueue("warm/up")
	wg.Wait()
	keys := benchKeys(b.N)
	b.ResetTimer()
	wg.Add(b.N)
	for _, k := range keys {
		c.Enqueue(k)
	}
	wg.Wait()
	b.StopTimer()
	cancel()
	<-done
}

func BenchmarkBaselineBareWorkqueue(b *testing.B) {
	var wg sync.WaitGroup
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	for range benchWorkers {
		go func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Forget(key)
				q.Done(key)
				wg.Done()
			}
		}()
	}
	keys := benchKeys(b.N)
	b.ResetTimer()
	wg.Add(b.N)
	for _, k := range keys {
		q.Add(k)
	}
	wg.Wait()
	b.StopTimer()
	q.ShutDown()
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/obj-%d", i)
	}
	return keys
}
