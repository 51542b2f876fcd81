// Package commitstatus mirrors CommitStatus objects to their SCM.
//
// A CommitStatus is sent only when the state it asks for differs from the state last synced. The
// digest of that state (endpoint, repository, SHA, name, phase, description, URL) is kept in
// status.syncedDigest, so the same spec is never sent twice, also across restarts. Permanent
// errors mark the object Stalled and are not retried with the same inputs; rate-limited calls are
// requeued after the SCM's reset time; other errors are retried with backoff.
//
// One reconcile is observe (observe.go: the object, its SCM target, this process's memo), a pure
// decide (decide.go: mirror, skip by memo, send; then back off or give up on the SCM's answer) and
// apply (apply.go: the SCM call, the status write, the memo, the metrics).
package commitstatus

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// FieldManager writes CommitStatus status.
const FieldManager = "commitstatus-controller"

// Defaults of the Reconciler's tunables.
const (
	DefaultRecheckInterval = time.Minute
	DefaultCallTimeout     = 30 * time.Second
	// defaultRateLimitWait is used when a rate-limited error does not say how long to wait.
	defaultRateLimitWait = 30 * time.Second
)

// Reconciler syncs one CommitStatus at a time.
type Reconciler struct {
	Statuses commitstatuslisters.CommitStatusLister
	Client   sluice.Interface
	Resolver *resolve.Resolver
	Recorder record.EventRecorder
	Metrics  *Metrics
	Log      *slog.Logger

	// RecheckInterval is how often a CommitStatus stalled on something the controller does not
	// watch (a Secret, or the SCM's answer) is looked at again. A look costs no SCM call unless the
	// object or the ScmProvider's credentials changed.
	RecheckInterval time.Duration
	// CallTimeout bounds one SCM call, waits for the shared rate limiter included.
	CallTimeout time.Duration
	// Clock is read for status.lastSyncTime; nil means the real clock.
	Clock clock.PassiveClock

	memo *memo
}

// New returns a Reconciler; set the exported fields before the first Reconcile.
func New() *Reconciler { return &Reconciler{memo: newMemo()} }

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

func (r *Reconciler) recheck() time.Duration {
	if r.RecheckInterval > 0 {
		return r.RecheckInterval
	}
	return DefaultRecheckInterval
}

// Reconcile syncs the CommitStatus named by key ("namespace/name"): observe, decide, apply.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if r.memo == nil {
		r.memo = newMemo()
	}
	o, found, err := r.observe(ctx, key)
	if !found {
		if err == nil {
			r.memo.forget(key)
		}
		return controller.Result{}, err
	}
	return r.apply(ctx, o, decide(o))
}

func (r *Reconciler) count(outcome string) {
	if r.Metrics != nil {
		r.Metrics.Outcomes.WithLabelValues(outcome).Inc()
	}
}
