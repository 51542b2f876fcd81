package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inFlight is a reconciler whose reconcile of "ns/slow" runs until its context ends or it is
// released, and which records every key it is asked for.
type inFlight struct {
	started  chan context.Context
	release  chan struct{}
	finished chan error
	keys     chan string
}

func newInFlight() *inFlight {
	return &inFlight{started: make(chan context.Context, 1), release: make(chan struct{}), finished: make(chan error, 1), keys: make(chan string, 10)}
}

func (f *inFlight) Reconcile(ctx context.Context, key string) (Result, error) {
	f.keys <- key
	if key != "ns/slow" {
		return Result{}, nil
	}
	f.started <- ctx
	select {
	case <-f.release:
		f.finished <- nil
	case <-ctx.Done():
		f.finished <- ctx.Err()
	}
	return Result{}, nil
}

// stopDuring starts a controller, lets it take "ns/slow", queues "ns/next" behind it on the only
// worker, and stops the controller with cause. It returns the reconcile's context and a channel
// closed when Run returns.
func stopDuring(t *testing.T, f *inFlight, grace time.Duration, cause error) (context.Context, <-chan struct{}) {
	c := New("unit", f, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ShutdownGracePeriod: grace})
	ctx, cancel := context.WithCancelCause(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		assert.NoError(t, c.Run(ctx, 1))
	}()
	c.Enqueue("ns/slow")
	reconcileCtx := <-f.started
	c.Enqueue("ns/next")
	cancel(cause)
	synctest.Wait()
	return reconcileCtx, returned
}

// A graceful stop takes no new key, and lets the reconcile in flight finish on a live context.
func TestAGracefulStopLetsTheReconcileInFlightFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newInFlight()
		reconcileCtx, returned := stopDuring(t, f, time.Minute, context.Canceled)
		require.NoError(t, reconcileCtx.Err(), "the reconcile in flight is not cancelled by the stop")
		select {
		case <-returned:
			t.Fatal("Run returned while a reconcile was in flight")
		default:
		}
		close(f.release)
		<-returned
		assert.NoError(t, <-f.finished)
		close(f.keys)
		var keys []string
		for k := range f.keys {
			keys = append(keys, k)
		}
		assert.Equal(t, []string{"ns/slow"}, keys, "a stopping worker takes no queued key")
	})
}

// A reconcile that outlasts the grace period is cancelled when it ends, not before.
func TestAStopCancelsTheReconcileInFlightAfterTheGracePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newInFlight()
		stopped := time.Now()
		_, returned := stopDuring(t, f, 7*time.Second, context.Canceled)
		<-returned
		assert.ErrorIs(t, <-f.finished, context.Canceled)
		assert.Equal(t, 7*time.Second, time.Since(stopped))
	})
}

// A lost Lease cancels the reconcile in flight at once: another replica may already run it.
func TestALostLeaseCancelsTheReconcileInFlightAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newInFlight()
		stopped := time.Now()
		_, returned := stopDuring(t, f, time.Minute, fmt.Errorf("lease lost: %w", ErrOwnershipLost))
		<-returned
		assert.ErrorIs(t, <-f.finished, context.Canceled)
		assert.Zero(t, time.Since(stopped))
	})
}
