package testenv

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Runner is what RunManager runs: a *manager.Manager, or anything that runs until its context ends.
type Runner interface {
	Run(ctx context.Context) error
}

// stopTimeout bounds a clean shutdown: workers finish their item, the Lease is released.
const stopTimeout = 30 * time.Second

// RunManager runs m in the background for the rest of the test. When the test ends, or earlier
// when the returned stop is called (a test that stops a leader to see a standby take over), m
// is stopped, and the test fails if Run returned an error or did not return within 30 seconds.
// stop may be called more than once.
func RunManager(t testing.TB, m Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("manager stopped with an error: %v", err)
				}
			case <-time.After(stopTimeout):
				t.Errorf("manager did not stop within %s", stopTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
