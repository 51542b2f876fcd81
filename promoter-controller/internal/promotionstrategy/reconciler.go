package promotionstrategy

import (
	"context"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
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
	PullRequests    promoterlisters.PullRequestLister
	CommitStatuses  commitstatuslisters.CommitStatusLister
	Gates           gatinglisters.GateLister
	Holds           HoldSource
	// Kinds says which kinds of other charts are installed and read; nil means all are.
	Kinds        crds.Kinds
	Repositories Resolver
	Recorder     record.EventRecorder
	Metrics      *metrics.Metrics
	Log          *slog.Logger
	// PullRequestQueue receives the keys of open PullRequests after each fetch.
	PullRequestQueue handler.Enqueuer
	Clock            clock.PassiveClock
	// Fetches decides which reconciles fetch; nil fetches on every reconcile.
	Fetches *Fetches
}

// Reconcile implements controller.Reconciler: observe, decide, apply.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, func(ps *promoterv1alpha1.PromotionStrategy) bool { return ps.Spec.Suspend })
	if !found && err == nil {
		r.Fetches.Forget(key)
	}
	if !found || err != nil {
		return controller.Result{}, err
	}
	cur, ps := l.Cached, l.Next
	if l.ReportSuspend(&ps.Status.Conditions) {
		ps.Status.ObservedGeneration = ps.Generation
		_, err := r.writeStatus(ctx, cur, ps.Status)
		return controller.Result{}, err
	}
	graph, err := environmentGraph(ps.Spec)
	if err != nil {
		return r.stall(ctx, cur, ps, ReasonInvalidConfiguration, err.Error())
	}
	if missing, ready := crds.Check(r.Kinds, kindsRead(ps.Spec)...); missing != "" {
		return r.stall(ctx, cur, ps, crds.ReasonCRDMissing, missing)
	} else if !ready {
		// Installed a moment ago: the Kinds' OnChange brings the strategy back once it is read.
		return controller.Result{}, nil
	}
	opCtx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	obs, err := r.observe(opCtx, ps, graph)
	if repository.IsConfigError(err) {
		return r.stall(ctx, cur, ps, ReasonInvalidConfiguration, err.Error())
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

func (r *Reconciler) get(namespace, name string) (*promoterv1alpha1.PromotionStrategy, error) {
	return r.Strategies.PromotionStrategies(namespace).Get(name)
}

func pollInterval(ps *promoterv1alpha1.PromotionStrategy) time.Duration {
	if ps.Spec.Interval != nil && ps.Spec.Interval.Duration > 0 {
		return ps.Spec.Interval.Duration
	}
	return DefaultInterval
}

// stall reports a problem a person must fix: Stalled=True, with a Warning Event once per new
// problem. Referenced objects are not all watched (Secrets), so it looks again at the poll.
func (r *Reconciler) stall(ctx context.Context, cur, ps *promoterv1alpha1.PromotionStrategy, reason, problem string) (controller.Result, error) {
	conditions.MarkStalled(&ps.Status.Conditions, ps.Generation, reason, problem)
	ps.Status.ObservedGeneration = ps.Generation
	written, err := r.writeStatus(ctx, cur, ps.Status)
	if err != nil {
		return controller.Result{}, err
	}
	if was := conditions.Get(cur.Status.Conditions, conditions.Stalled); written && (was == nil || was.Message != conditions.Get(ps.Status.Conditions, conditions.Stalled).Message) {
		r.Recorder.Event(ps, corev1.EventTypeWarning, reason, problem)
	}
	return controller.Result{RequeueAfter: pollInterval(ps)}, nil
}

// kindsRead are the kinds of other charts a strategy reads: its repository always, commit
// statuses and gates when it names any.
func kindsRead(spec promoterv1alpha1.PromotionStrategySpec) []schema.GroupResource {
	out := slices.Clone(crds.SCM)
	statuses, gates := len(spec.ActiveCommitStatuses)+len(spec.ProposedCommitStatuses) > 0, false
	for _, e := range spec.Environments {
		statuses = statuses || len(e.ActiveCommitStatuses)+len(e.ProposedCommitStatuses) > 0
		gates = gates || e.Gates != nil
	}
	if statuses {
		out = append(out, crds.CommitStatuses)
	}
	if gates {
		out = append(out, crds.Gates)
	}
	return out
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

// statusWriter writes PromotionStrategy status unless it equals cur's. It returns a conflict
// instead of retrying it on the live object: a status decided from a stale copy (history without
// the latest merge, say) must not land, or be announced; the reconcile the conflict brings back
// decides again from the live one.
var statusWriter = reconcile.StatusWriter[*promoterv1alpha1.PromotionStrategy, promoterv1alpha1.PromotionStrategyStatus]{
	Kind: "PromotionStrategy", FieldManager: FieldManager, ReturnConflicts: true,
	Status: func(ps *promoterv1alpha1.PromotionStrategy) *promoterv1alpha1.PromotionStrategyStatus {
		return &ps.Status
	},
}

// writeStatus writes status through statusWriter, and says whether it wrote.
func (r *Reconciler) writeStatus(ctx context.Context, cur *promoterv1alpha1.PromotionStrategy, status promoterv1alpha1.PromotionStrategyStatus) (bool, error) {
	next := cur.DeepCopy()
	next.Status = status
	_, wrote, err := statusWriter.Write(ctx, r.Client.PromoterV1alpha1().PromotionStrategies(cur.Namespace), cur, next)
	return wrote, err
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
