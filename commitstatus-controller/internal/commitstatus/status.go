package commitstatus

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/scm"
)

// Condition reasons of a CommitStatus, besides those of resolve (a missing ScmRepository,
// ScmProvider or Secret) and suspend.
const (
	// ReasonSynced: the SCM holds the desired status.
	ReasonSynced = "Synced"
	// ReasonNotSent: suspended, and the SCM does not hold what the spec asks for.
	ReasonNotSent = "NotSent"
	// ReasonInCluster: the ScmProvider is plain git; the object itself is the status.
	ReasonInCluster = "InCluster"
	// ReasonRateLimited: waiting for the SCM's rate limit to reset.
	ReasonRateLimited = "RateLimited"
	// ReasonSCMUnavailable: the SCM failed or could not be reached; retried with backoff.
	ReasonSCMUnavailable = "SCMUnavailable"
	// Permanent SCM refusals, which mark the object Stalled.
	ReasonUnauthorized = "SCMUnauthorized"
	ReasonForbidden    = "SCMForbidden"
	ReasonNotFound     = "SCMNotFound"
	ReasonRefused      = "SCMRefusedStatus"
	ReasonUnsupported  = "SCMUnsupported"
)

func stalledReason(err error) string {
	switch scm.KindOf(err) {
	case scm.KindUnauthorized:
		return ReasonUnauthorized
	case scm.KindForbidden:
		return ReasonForbidden
	case scm.KindNotFound:
		return ReasonNotFound
	case scm.KindUnsupported:
		return ReasonUnsupported
	}
	return ReasonRefused
}

// Outcomes of a reconcile, as the outcome label of sluice_commitstatus_reconcile_outcomes_total.
const (
	OutcomeSent        = "sent"
	OutcomeUnchanged   = "unchanged"
	OutcomeInCluster   = "in_cluster"
	OutcomeSuspended   = "suspended"
	OutcomeRateLimited = "rate_limited"
	OutcomeStalled     = "stalled"
	OutcomeFailed      = "failed"
	// OutcomeImported: imported from the SCM, so never mirrored back.
	OutcomeImported = "imported"
)

// Metrics are the commitstatus-controller's own series; SCM calls are measured by scmmetrics.
type Metrics struct {
	// Outcomes counts reconciles by what they did; "unchanged" counts the SCM calls the digest saved.
	Outcomes *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_commitstatus_reconcile_outcomes_total",
		Help: "CommitStatus reconciles by outcome: sent, unchanged (the SCM already held the desired state), in_cluster, suspended, rate_limited, stalled, failed, imported (read from the SCM, never sent back).",
	}, []string{"outcome"})}
	reg.MustRegister(m.Outcomes)
	return m
}

var commitStatusStatus = reconcile.StatusWriter[*commitstatusv1alpha1.CommitStatus, commitstatusv1alpha1.CommitStatusStatus]{
	Kind: "CommitStatus", FieldManager: FieldManager,
	Status: func(cs *commitstatusv1alpha1.CommitStatus) *commitstatusv1alpha1.CommitStatusStatus {
		return &cs.Status
	},
}

// write updates the status when it changed, and tells about transitions with Events.
func (r *Reconciler) write(ctx context.Context, before, after *commitstatusv1alpha1.CommitStatus) (*commitstatusv1alpha1.CommitStatus, error) {
	written, wrote, err := commitStatusStatus.Write(ctx, r.Client.CommitstatusV1alpha1().CommitStatuses(after.Namespace), before, after)
	if err != nil {
		return nil, err
	}
	if wrote {
		r.announce(before, written)
	}
	return written, nil
}

// announce emits an Event when readiness or suspension changed, or a new state was sent; never
// for a reconcile that changed nothing.
func (r *Reconciler) announce(before, after *commitstatusv1alpha1.CommitStatus) {
	if r.Recorder == nil {
		return
	}
	if s := conditions.Get(after.Status.Conditions, conditions.Suspended); s != nil && !sameCondition(s, conditions.Get(before.Status.Conditions, conditions.Suspended)) {
		r.Recorder.Event(after, corev1.EventTypeNormal, s.Reason, s.Message)
	}
	ready := conditions.Get(after.Status.Conditions, conditions.Ready)
	if ready == nil {
		return
	}
	switch {
	case !sameCondition(ready, conditions.Get(before.Status.Conditions, conditions.Ready)):
		eventType := corev1.EventTypeNormal
		if conditions.IsTrue(after.Status.Conditions, conditions.Stalled) || (ready.Status != metav1.ConditionTrue && ready.Reason != ReasonRateLimited && ready.Reason != ReasonNotSent) {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Event(after, eventType, ready.Reason, ready.Message)
		if r.Log != nil {
			r.Log.Info("CommitStatus changed state", "key", after.Namespace+"/"+after.Name,
				"ready", ready.Status, "reason", ready.Reason, "message", ready.Message)
		}
	case after.Status.SyncedDigest != before.Status.SyncedDigest && ready.Reason == ReasonSynced:
		r.Recorder.Event(after, corev1.EventTypeNormal, ready.Reason, ready.Message)
	}
}

func sameCondition(a, b *metav1.Condition) bool {
	return a != nil && b != nil && a.Status == b.Status && a.Reason == b.Reason
}
