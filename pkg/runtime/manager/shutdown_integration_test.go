package manager_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/leaderelection"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
)

// slowLeader is a leading manager whose reconcile of one Gate runs until it is released or its
// context ends.
type slowLeader struct {
	m             *manager.Manager
	lease, holder string
	reconcileCtx  context.Context
	release       chan struct{}
	ended         chan error // the reconcile's end: nil if released, else its context's error
	done          chan error // Run's return
	stop          context.CancelFunc
}

func startSlowLeader(t *testing.T) *slowLeader {
	t.Helper()
	l := &slowLeader{lease: fmt.Sprintf("drain-%d", time.Now().UnixNano()), release: make(chan struct{}), ended: make(chan error, 1), done: make(chan error, 1)}
	opts := options.Defaults("drain-controller")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.LeaderElect, opts.LeaderElectionNamespace, opts.LeaderElectionID = true, "default", l.lease
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 200*time.Millisecond
	opts.ShutdownGracePeriod = time.Minute
	m, err := manager.New("drain-controller", opts, env.Config, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	l.m = m
	ns := newNamespace(t)
	started := make(chan context.Context, 1)
	// Other tests' Gates are reconciled at once; only this one's is slow.
	c := m.NewController("slow", controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		if key != ns+"/in-flight" {
			return controller.Result{}, nil
		}
		started <- ctx
		select {
		case <-l.release:
			l.ended <- nil
		case <-ctx.Done():
			l.ended <- ctx.Err()
		}
		return controller.Result{}, nil
	}))
	_, err = m.SluiceInformers.Gating().V1alpha1().Gates().Informer().AddEventHandler(handler.EnqueueObject(c))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	go func() { l.done <- m.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-l.release:
		default:
			close(l.release)
		}
		<-l.done
	})

	createGate(t, ns, "in-flight", nil)
	select {
	case l.reconcileCtx = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("no reconcile started")
	}
	l.holder = leaseHolder(t, l.lease)
	require.NotEmpty(t, l.holder)
	return l
}

func (l *slowLeader) requireRunning(t *testing.T) {
	t.Helper()
	select {
	case err := <-l.done:
		t.Fatalf("Run returned while a reconcile was in flight: %v", err)
	default:
	}
}

func (l *slowLeader) returned(t *testing.T) error {
	t.Helper()
	select {
	case err := <-l.done:
		l.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not stop")
		return nil
	}
}

// A leader told to stop while a reconcile is in flight (a merge on an SCM, say) lets it finish on
// a live context and keeps renewing its Lease meanwhile, so no standby starts the same work beside
// it; it releases the Lease once the reconcile has ended.
func TestAStoppingLeaderKeepsItsLeaseUntilTheReconcileInFlightEnds(t *testing.T) {
	testenv.SkipIfShort(t)
	l := startSlowLeader(t)
	require.True(t, l.m.Leading())
	l.stop()
	stopped := time.Now()

	require.NoError(t, testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		lease, err := env.Kube.CoordinationV1().Leases("default").Get(ctx, l.lease, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.holder {
			return false, fmt.Errorf("the Lease went to %v while a reconcile was in flight", lease.Spec.HolderIdentity)
		}
		return lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(stopped), nil
	}), "the stopping leader renews its Lease while its reconcile runs")
	require.NoError(t, l.reconcileCtx.Err(), "the reconcile in flight is not cancelled by the stop")
	l.requireRunning(t)
	assert.False(t, l.m.Leading(), "a stopping leader takes no new work, though it holds the Lease")

	close(l.release)
	require.NoError(t, l.returned(t))
	assert.NoError(t, <-l.ended)
	assert.Empty(t, leaseHolder(t, l.lease), "the Lease is released once the reconcile has ended")
}

// A leader that loses its Lease cancels its reconcile in flight without waiting for it: another
// replica may already be running the same work.
func TestALeaderThatLosesItsLeaseCancelsTheReconcileInFlight(t *testing.T) {
	testenv.SkipIfShort(t)
	l := startSlowLeader(t)
	thief := "another-replica"
	// The leader renews every 200 ms, so the theft may race a renewal.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := env.Kube.CoordinationV1().Leases("default").Get(context.Background(), l.lease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = &thief, &now, &now
		_, err = env.Kube.CoordinationV1().Leases("default").Update(context.Background(), lease, metav1.UpdateOptions{})
		return err
	}))

	assert.ErrorIs(t, l.returned(t), leaderelection.ErrLeaseLost)
	assert.ErrorIs(t, <-l.ended, context.Canceled, "the reconcile in flight was cancelled, not left to finish")
	assert.Equal(t, thief, leaseHolder(t, l.lease))
}
