package testenv

import (
	"context"
	"fmt"
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
	stopRunner := Background(m)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := stopRunner(); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Background runs m until the returned stop is called, for a runner shared by every test of a
// package (register stop with OnStop). stop waits for Run to return, and says whether it returned
// an error or did not return within 30 seconds; it may be called more than once, and answers the
// same each time.
func Background(m Runner) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var result error
	return func() error {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					result = fmt.Errorf("manager stopped with an error: %w", err)
				}
			case <-time.After(stopTimeout):
				result = fmt.Errorf("manager did not stop within %s", stopTimeout)
			}
		})
		return result
	}
}
