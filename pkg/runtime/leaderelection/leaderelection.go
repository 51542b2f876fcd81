// Package leaderelection runs work only while this process holds a Lease. On a clean shutdown the
// work stops first, while the Lease is still held and renewed, and the Lease is released after,
// so a standby takes over at once and never beside work still in flight. Losing the Lease is
// fatal: the work is cancelled at once, and the process exits and restarts as a standby instead
// of running on with a stale view of who leads.
package leaderelection

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// ErrLeaseLost is returned when another process took the Lease while this one was leading. It is
// also the cause that ends the work's context then, and wraps controller.ErrOwnershipLost so
// that reconciles in flight stop at once.
var ErrLeaseLost = fmt.Errorf("leader election lost: another replica holds the lease (%w)", controller.ErrOwnershipLost)

// Config names the Lease and sets its timings.
type Config struct {
	Namespace     string
	Name          string
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Elector campaigns for a Lease.
type Elector struct {
	cfg      Config
	client   kubernetes.Interface
	log      *slog.Logger
	watchdog *leaderelection.HealthzAdaptor
}

// New returns an Elector. Its Watchdog belongs in /livez: it fails when this process believes it
// leads but has not renewed the Lease in time.
func New(client kubernetes.Interface, cfg Config, log *slog.Logger) *Elector {
	return &Elector{
		cfg:      cfg,
		client:   client,
		log:      log.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity),
		watchdog: leaderelection.NewLeaderHealthzAdaptor(cfg.RenewDeadline / 2),
	}
}

// Watchdog returns the liveness check for the Lease.
func (e *Elector) Watchdog() *leaderelection.HealthzAdaptor { return e.watchdog }

// Run blocks until ctx is done or leadership is lost. While leading it runs lead with a context
// that ends on shutdown (cause: ctx's) or on loss of the Lease (cause: ErrLeaseLost). On shutdown
// the Lease is renewed until lead returns, and released then. Run returns ErrLeaseLost if the
// Lease was lost, or lead's error.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	// client-go releases the Lease as soon as the elector's context ends, so that context must
	// outlive ctx: it ends only once lead has returned.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()

	// The elector starts OnStartedLeading in a goroutine of its own; handing the context over a
	// channel lets Run own the lead goroutine and wait for it deterministically.
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        e.watchdog,
		Name:            e.cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaseCtx context.Context) { leading <- leaseCtx },
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != e.cfg.Identity {
					e.log.Info("another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(electorCtx)
	}()

	select {
	case <-ctx.Done():
		// Shut down while standing by.
		stopElector()
		<-electorDone
		return nil
	case <-electorDone:
		// Acquired and lost before lead could start.
		return ErrLeaseLost
	case leaseCtx := <-leading:
		e.log.Info("acquired lease; starting controllers")
		leadErr := e.lead(ctx, leaseCtx, lead)
		stopElector()
		<-electorDone
		e.log.Info("released lease")
		switch {
		case leadErr != nil:
			return leadErr
		case ctx.Err() == nil:
			return ErrLeaseLost
		}
		return nil
	}
}

// lead runs lead until ctx ends or the Lease, held while leaseCtx lives, is lost.
func (e *Elector) lead(ctx, leaseCtx context.Context, lead func(context.Context) error) error {
	workCtx, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopWork(nil)
	stopOnShutdown := context.AfterFunc(ctx, func() { stopWork(context.Cause(ctx)) })
	defer stopOnShutdown()
	stopOnLoss := context.AfterFunc(leaseCtx, func() {
		e.log.Error("lost the lease; cancelling controllers")
		stopWork(ErrLeaseLost)
	})
	defer stopOnLoss()
	return lead(workCtx)
}
