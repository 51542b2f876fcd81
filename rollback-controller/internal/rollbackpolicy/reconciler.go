// Package rollbackpolicy reconciles RollbackPolicies: it watches the active commit statuses of
// the environments a policy selects and, when one stays in failure long enough soon enough after
// a promotion, creates the RevertCommit that rolls the environment back.
//
// The RevertCommit's name is derived from the policy, the environment and the bad dry SHA, so a
// restart that repeats a create finds the first one, and a bad dry SHA is never reverted twice.
package rollbackpolicy

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// FieldManager is the field manager of every write.
const FieldManager = "rollback-controller"

// EventRevertCommitCreated is the Event on a policy that fired.
const EventRevertCommitCreated = "RevertCommitCreated"

// Reconciler reconciles RollbackPolicies.
type Reconciler struct {
	Client         sluice.Interface
	Policies       rollbacklisters.RollbackPolicyLister
	Strategies     promoterlisters.PromotionStrategyLister
	CommitStatuses commitstatuslisters.CommitStatusLister
	RevertCommits  rollbacklisters.RevertCommitLister
	Recorder       record.EventRecorder
	Metrics        *metrics.Rollbacks
	Log            *slog.Logger
	// PeerCRDs reports whether the CRDs of other Sluice charts that policies read are served and
	// watched, and when not, which are missing and which chart installs them. nil means they are.
	PeerCRDs       func() (ready bool, missing string)
	StalledRecheck time.Duration
	// Clock is the time: the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock
}

// ReasonPeerCRDsMissing is the Stalled reason of a policy whose peer CRDs are not installed.
const ReasonPeerCRDsMissing = "PeerCRDsMissing"

type policyStall struct{ reason, message string }

func (s *policyStall) Error() string { return s.message }

// policyStatus writes RollbackPolicy status. The status carries what earlier reconciles
// decided (when a failure began, the dry SHAs reverted), so one decided from a stale copy must not
// land: the conflict re-runs the reconcile from the live object instead.
var policyStatus = reconcile.StatusWriter[*rollbackv1alpha1.RollbackPolicy, rollbackv1alpha1.RollbackPolicyStatus]{
	Kind: "RollbackPolicy", FieldManager: FieldManager, ReturnConflicts: true,
	Status: func(p *rollbackv1alpha1.RollbackPolicy) *rollbackv1alpha1.RollbackPolicyStatus { return &p.Status },
}

// Reconcile implements controller.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, func(p *rollbackv1alpha1.RollbackPolicy) bool { return p.Spec.Suspend })
	if !found || err != nil {
		return controller.Result{}, err
	}
	cur, p := l.Cached, l.Next
	st, gen := &p.Status, p.Generation
	st.ObservedGeneration = gen
	if l.ReportSuspend(&st.Conditions) {
		return controller.Result{}, r.write(ctx, cur, p, nil)
	}
	if ready, missing := r.peers(); !ready {
		conditions.MarkStalled(&st.Conditions, gen, ReasonPeerCRDsMissing,
			"a RollbackPolicy reads PromotionStrategies (promoter.sluice.dev) and CommitStatuses (commitstatus.sluice.dev): "+missing)
		return controller.Result{RequeueAfter: r.StalledRecheck}, r.write(ctx, cur, p, nil)
	}
	res, announce, err := r.evaluate(ctx, p)
	if ps, ok := err.(*policyStall); ok {
		conditions.MarkStalled(&st.Conditions, gen, ps.reason, ps.message)
		return controller.Result{}, r.write(ctx, cur, p, nil)
	}
	if err != nil {
		conditions.MarkNotReady(&st.Conditions, gen, "Retrying", err.Error())
		if werr := r.write(ctx, cur, p, nil); werr != nil {
			r.Log.Info("cannot write status", "rollbackpolicy", key, "error", werr)
		}
		return controller.Result{}, err
	}
	return res, r.write(ctx, cur, p, announce)
}

func (r *Reconciler) get(namespace, name string) (*rollbackv1alpha1.RollbackPolicy, error) {
	return r.Policies.RollbackPolicies(namespace).Get(name)
}

// peers reports whether the CRDs of other charts are served and watched, and if not, what to do.
func (r *Reconciler) peers() (bool, string) {
	if r.PeerCRDs == nil {
		return true, ""
	}
	return r.PeerCRDs()
}

// write stores the status when it changed and then announces what the reconcile did: only after
// a write this call made, so a RevertCommit created once is announced once.
func (r *Reconciler) write(ctx context.Context, cur, p *rollbackv1alpha1.RollbackPolicy, announce []func()) error {
	_, wrote, err := policyStatus.Write(ctx, r.Client.RollbackV1alpha1().RollbackPolicies(cur.Namespace), cur, p)
	if err != nil || !wrote {
		return err
	}
	for _, f := range announce {
		f()
	}
	return nil
}

// evaluate observes every selected environment, decides the RevertCommits that are due and the
// status, then creates them. The returned functions announce what was done, once the status is
// written.
func (r *Reconciler) evaluate(ctx context.Context, p *rollbackv1alpha1.RollbackPolicy) (controller.Result, []func(), error) {
	o, err := r.observe(p)
	if err != nil {
		return controller.Result{}, nil, err
	}
	pl := decide(o)
	announce, err := r.apply(ctx, p, pl)
	if err != nil {
		return controller.Result{}, nil, err
	}
	return controller.Result{RequeueAfter: pl.requeueAfter}, announce, nil
}
