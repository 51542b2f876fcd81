// Package leaderelection runs work only while this process holds a Lease. The Lease is released
// on a clean shutdown so a standby takes over at once, and losing it is fatal: the process exits
// and restarts as a standby instead of running on with a stale view of who leads.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeaseLost is returned when another process took the Lease while this one was leading.
var ErrLeaseLost = errors.New("leader election lost: another replica holds the lease")

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
// that is cancelled on loss of the Lease or shutdown, and waits for lead to return before
// releasing the Lease. It returns ErrLeaseLost if the Lease was lost, or lead's error.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

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
			OnStartedLeading: func(leadCtx context.Context) { leading <- leadCtx },
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
		elector.Run(runCtx)
	}()

	select {
	case <-electorDone:
		// Shut down while standing by.
		return nil
	case leadCtx := <-leading:
		e.log.Info("acquired lease; starting controllers")
		leadErr := lead(leadCtx)
		// Step down and release the Lease now that no controller is running.
		cancel()
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
