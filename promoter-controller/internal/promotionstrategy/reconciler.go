package promotionstrategy

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
)

// reconcileTimeout bounds the git and SCM work of one reconcile: a stalled remote must not hold
// a worker forever.
const reconcileTimeout = 2 * time.Minute

// DefaultInterval is the fallback poll when spec.interval is not set.
const DefaultInterval = 5 * time.Minute

// Resolver gives the repository a strategy names.
type Resolver interface {
	Resolve(ctx context.Context, namespace, name string) (*repository.Repository, error)
}

// HoldSource gives the rollback holds on one environment of a strategy.
type HoldSource interface {
	For(namespace, strategy, branch string) ([]promotion.Hold, error)
}

// Reconciler promotes the proposed commits of a PromotionStrategy's environments.
type Reconciler struct {
	Client          sluice.Interface
	Strategies      promoterlisters.PromotionStrategyLister
	ProposedCommits promoterlisters.ProposedCommitLister
	CommitStatuses  commitstatuslisters.CommitStatusLister
	Gates           gatinglisters.GateLister
	Holds           HoldSource
	Repositories    Resolver
	Recorder        record.EventRecorder
	Metrics         *metrics.Metrics
	Log             *slog.Logger
	// PullRequestQueue receives the keys of open PullRequests after each fetch.
	PullRequestQueue handler.Enqueuer
	Clock            func() time.Time
}

// Reconcile implements controller.Reconciler: observe, decide, apply.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, controller.Permanent(err)
	}
	cur, err := r.Strategies.PromotionStrategies(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	ps := cur.DeepCopy()
	s := suspend.Get(ps, ps.Spec.Suspend)
	suspend.Report(&ps.Status.Conditions, ps.Generation, s)
	if s.Suspended {
		ps.Status.ObservedGeneration = ps.Generation
		_, err := r.writeStatus(ctx, cur, ps.Status)
		return controller.Result{}, err
	}
	graph, err := environmentGraph(ps.Spec)
	if err != nil {
		return r.stall(ctx, cur, ps, err)
	}
	opCtx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	obs, err := r.observe(opCtx, ps, graph)
	if repository.IsConfigError(err) {
		return r.stall(ctx, cur, ps, err)
	}
	if err != nil {
		return r.fail(ctx, cur, ps, err)
	}
	d := decide(obs)
	if err := r.apply(opCtx, ps, d.Envs); err != nil {
		return r.fail(ctx, cur, ps, err)
	}
	written, err := r.writeStatus(ctx, cur, d.Status)
	if err != nil {
		return controller.Result{}, err
	}
	if written {
		r.announce(ps, d.Announce)
	}
	return controller.Result{RequeueAfter: pollInterval(ps)}, nil
}

func pollInterval(ps *promoterv1alpha1.PromotionStrategy) time.Duration {
	if ps.Spec.Interval != nil && ps.Spec.Interval.Duration > 0 {
		return ps.Spec.Interval.Duration
	}
	return DefaultInterval
}

// stall reports a problem a person must fix: Stalled=True, with a Warning Event once per new
// problem. Referenced objects are not all watched (Secrets), so it looks again at the poll.
func (r *Reconciler) stall(ctx context.Context, cur, ps *promoterv1alpha1.PromotionStrategy, problem error) (controller.Result, error) {
	conditions.MarkStalled(&ps.Status.Conditions, ps.Generation, ReasonInvalidConfiguration, problem.Error())
	ps.Status.ObservedGeneration = ps.Generation
	written, err := r.writeStatus(ctx, cur, ps.Status)
	if err != nil {
		return controller.Result{}, err
	}
	if was := conditions.Get(cur.Status.Conditions, conditions.Stalled); written && (was == nil || was.Message != conditions.Get(ps.Status.Conditions, conditions.Stalled).Message) {
		r.Recorder.Event(ps, corev1.EventTypeWarning, ReasonInvalidConfiguration, problem.Error())
	}
	return controller.Result{RequeueAfter: pollInterval(ps)}, nil
}

// fail reports an error that is retried with backoff.
func (r *Reconciler) fail(ctx context.Context, cur, ps *promoterv1alpha1.PromotionStrategy, problem error) (controller.Result, error) {
	conditions.MarkNotReady(&ps.Status.Conditions, ps.Generation, ReasonPromotionFailed, problem.Error())
	ps.Status.ObservedGeneration = ps.Generation
	if _, err := r.writeStatus(ctx, cur, ps.Status); err != nil {
		r.Log.Info("cannot write status", "strategy", cur.Namespace+"/"+cur.Name, "error", err)
	}
	return controller.Result{}, problem
}

// writeStatus writes status unless it equals cur's, and says whether it wrote. The write carries
// cur's resourceVersion, so it fails with a conflict when cur was stale.
func (r *Reconciler) writeStatus(ctx context.Context, cur *promoterv1alpha1.PromotionStrategy, status promoterv1alpha1.PromotionStrategyStatus) (bool, error) {
	if equality.Semantic.DeepEqual(cur.Status, status) {
		return false, nil
	}
	next := cur.DeepCopy()
	next.Status = status
	_, err := r.Client.PromoterV1alpha1().PromotionStrategies(cur.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	return err == nil, err
}

// announce makes the Events and metrics of a status that was written.
func (r *Reconciler) announce(ps *promoterv1alpha1.PromotionStrategy, a announcements) {
	for _, e := range a.Events {
		r.Recorder.Event(ps, e.Type, e.Reason, e.Message)
	}
	for _, p := range a.Promotions {
		r.Metrics.Promoted(ps.Namespace, ps.Name, p.Environment, p.External, p.LeadTime)
	}
	for _, b := range a.Blocks {
		r.Metrics.Blocked(ps.Namespace, ps.Name, b.Environment, string(b.Rule))
	}
}
