package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// observation is what one reconcile reads of a HealthCheck, its targets and its CommitStatus,
// before anything is decided. Exactly one of Suspend.Suspended, Stalled, Waiting or Evaluated
// holds, checked in that order.
type observation struct {
	// Key is namespace/name: the owner of the watches the HealthCheck reads.
	Key string
	// HealthCheck is the informer's copy: never change it.
	HealthCheck *healthv1alpha1.HealthCheck
	Suspend     suspend.State
	// Stalled is input a person must fix: bad CEL, a broken user library, a bad target.
	Stalled *problem
	// Waiting is true while a watch the HealthCheck reads has not listed; WaitingFor names the
	// scopes that have neither listed nor failed.
	Waiting    bool
	WaitingFor []string
	Evaluated  *evaluation
}

// problem is why a HealthCheck cannot be evaluated as written.
type problem struct {
	Reason string
	Cause  error
}

// evaluation is the health of the targets as the watch caches hold them.
type evaluation struct {
	// Now is when the targets were evaluated.
	Now       time.Time
	Resources []healthv1alpha1.ResourceHealth
	// Errors counts the objects whose check failed to evaluate; Took is how long evaluation took.
	Errors int
	Took   time.Duration
	// Revision is the revision the targets run; Commit is the commit to publish for, when
	// spec.commitStatus needs one; RevisionErr says why neither could be read.
	Revision, Commit string
	RevisionErr      error
	// Unsettled is the revision source, InProgress, while it has not finished applying Revision:
	// the targets may still be another revision's objects, so no verdict is credited to Revision.
	Unsettled    *healthv1alpha1.ResourceHealth
	CommitStatus commitStatusRead
}

// commitStatusRead is the HealthCheck's CommitStatus as the watch cache holds it.
type commitStatusRead struct {
	// Served is false when the CommitStatus CRD is not installed.
	Served bool
	// Problem says why the watch cannot tell, when it cannot.
	Problem string
	// Existing is the object; nil when there is none.
	Existing *unstructured.Unstructured
	Err      error
}

// observe reads everything one reconcile decides from. Starting the watches the HealthCheck
// needs is part of reading them. An error is one to retry, with nothing to write.
func (r *Reconciler) observe(ctx context.Context, key string, l reconcile.Loaded[*healthv1alpha1.HealthCheck]) (*observation, error) {
	hc := l.Cached
	o := &observation{Key: key, HealthCheck: hc, Suspend: l.Suspend}
	if l.Suspend.Suspended {
		return o, nil
	}
	resolver, reason, err := r.resolver(hc)
	if err != nil {
		o.Stalled = &problem{Reason: reason, Cause: err}
		return o, nil
	}
	p := newPlan(hc, r.Mapper, r.AllowCrossNamespaceRefs)
	if err := p.addTargets(); err != nil {
		return nil, err
	}
	if len(p.invalid) > 0 {
		o.Stalled = &problem{Reason: healthv1alpha1.ReasonInvalidTarget, Cause: errors.New(strings.Join(p.invalid, "; "))}
		return o, nil
	}
	denied, err := r.deniedTargets(ctx, p)
	if err != nil {
		return nil, err
	}
	if denied != "" {
		// Stalled releases its watches: what it may not read is not even kept in the cache for it.
		o.Stalled = &problem{Reason: healthv1alpha1.ReasonAccessDenied, Cause: errors.New(denied)}
		return o, nil
	}
	direct := len(p.objects)
	complete, err := r.watch(key, p, resolver)
	if err != nil {
		return nil, err
	}
	if o.WaitingFor = r.unsynced(key, p); !complete || len(o.WaitingFor) > 0 {
		o.Waiting = true
		return o, nil
	}
	if err := r.dropDeniedInventory(ctx, p, direct); err != nil {
		return nil, err
	}
	o.Evaluated = r.evaluation(p, resolver)
	return o, nil
}

// resolver merges the spec's checks, the user library and the built-in library. A broken source
// stops evaluation: falling back to a lower source could call healthy what its author meant to
// call failed.
func (r *Reconciler) resolver(hc *healthv1alpha1.HealthCheck) (*health.Resolver, string, error) {
	user, err := r.Library.Layer()
	if err != nil {
		return nil, celReason(err, healthv1alpha1.ReasonInvalidUserLibrary), err
	}
	checks := make([]health.Check, len(hc.Spec.HealthCheckExprs))
	for i, c := range hc.Spec.HealthCheckExprs {
		checks[i] = health.Check{APIVersion: c.APIVersion, Kind: c.Kind, Current: c.Current, InProgress: c.InProgress, Failed: c.Failed}
	}
	spec, err := health.NewLayer(health.SourceSpec, checks)
	if err != nil {
		return nil, healthv1alpha1.ReasonInvalidHealthCheckExprs, fmt.Errorf("spec.healthCheckExprs: %w", err)
	}
	if err := health.CompileAll(r.Compiler, checks); err != nil {
		return nil, healthv1alpha1.ReasonInvalidCELExpression, fmt.Errorf("spec.healthCheckExprs: %w", err)
	}
	return health.NewResolver(spec, user, r.Builtin), "", nil
}

func celReason(err error, otherwise string) string {
	var ce *cel.CompileError
	if errors.As(err, &ce) {
		return healthv1alpha1.ReasonInvalidCELExpression
	}
	return otherwise
}
