package gatestatus

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/metrics"
	"github.com/sluicehq/sluice/pkg/conditions"
	gatelogic "github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/text"
)

// FieldManager writes Gate status.
const FieldManager = "gate-controller"

// Event reasons on Gates.
const (
	ReasonOpened          = "Opened"
	ReasonClosed          = "Closed"
	ReasonOverrideExpired = "OverrideExpired"
	ReasonInvalidSpec     = "InvalidSpec"
	ReasonStatusRejected  = "StatusRejected"
)

// Reconciler keeps each Gate's status current.
type Reconciler struct {
	Gates    gatinglisters.GateLister
	Client   sluice.Interface
	Recorder record.EventRecorder
	Metrics  *metrics.Gates
	// Held lists at most limit objects the gate holds, and their full count.
	Held func(ref gatelogic.Ref, limit int) ([]gatingv1alpha1.HeldObject, int)
	// Transitioned is told, with full precision, when a gate's state changes.
	Transitioned func(ref gatelogic.Ref, at time.Time)
	// Clock is the time; the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock

	lastWrite sync.Map // "namespace/name" -> time.Time of the last status write
	reported  sync.Map // "namespace/name" -> int32, the held count the last Holding or Released Event gave
}

// HeldListInterval spaces out status writes that change only the held objects: when a gate
// closes over thousands of objects, each one held would otherwise rewrite the gate's status.
// Changes of state are written at once.
const HeldListInterval = time.Second

// gateStatus writes Gate status as the controller.
var gateStatus = reconcile.StatusWriter[*gatingv1alpha1.Gate, gatingv1alpha1.GateStatus]{
	Kind: "Gate", FieldManager: FieldManager, Status: func(g *gatingv1alpha1.Gate) *gatingv1alpha1.GateStatus { return &g.Status },
}

// Reconcile evaluates one Gate, keyed "namespace/name", writes its status if it changed, and
// asks to be called again when a window or the override next changes it. A suspended gate is
// evaluated too: NextStatus keeps its state and still reports what it holds.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, nil)
	if err != nil {
		return controller.Result{}, err
	}
	if !found {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		r.Metrics.Forget(ns, name)
		r.lastWrite.Delete(key)
		r.reported.Delete(key)
		return controller.Result{}, nil
	}
	g, now := l.Cached, r.Clock.Now()
	ref := gatelogic.Ref{Namespace: g.Namespace, Name: g.Name}
	cycle := gatelogic.Cycle(ref, r.refsOf)
	if wait := r.sinceLastWrite(key, now); wait > 0 {
		// A change of the held objects alone would wait anyway: unless something else changed,
		// do not list them. As a gate closes over thousands of objects, each one held wakes it.
		unchanged, out := NextStatus(g, now, Observed{Held: g.Status.Held, Holding: int(g.Status.Holding), Cycle: cycle})
		if equality.Semantic.DeepEqual(unchanged, g.Status) {
			// The held metric follows at the next write, within HeldListInterval.
			return controller.Result{RequeueAfter: minPositive(out.Requeue, wait)}, nil
		}
	}
	held, holding := r.Held(ref, gatingv1alpha1.MaxHeld)
	status, out := NextStatus(g, now, Observed{Held: held, Holding: holding, Cycle: cycle})
	result := controller.Result{RequeueAfter: out.Requeue}
	r.Metrics.Held.WithLabelValues(g.Namespace, g.Name).Set(float64(holding))
	open := 0.0
	if status.Open {
		open = 1
	}
	r.Metrics.Open.WithLabelValues(g.Namespace, g.Name).Set(open)

	if wait := r.heldListWait(key, g.Status, status, now); wait > 0 {
		result.RequeueAfter = minPositive(result.RequeueAfter, wait)
		return result, nil
	}
	l.Next.Status = status
	_, wrote, err := gateStatus.Write(ctx, r.Client.GatingV1alpha1().Gates(g.Namespace), g, l.Next)
	if apierrors.IsInvalid(err) {
		return controller.Result{}, r.statusRejected(ctx, g, l.Next, err, now)
	}
	if err != nil {
		return controller.Result{}, err
	}
	if wrote {
		r.lastWrite.Store(key, now)
		r.report(g, status, out, now)
	}
	result.RequeueAfter = minPositive(result.RequeueAfter, r.reportHeldCount(key, g, status, now))
	return result, nil
}

func (r *Reconciler) get(ns, name string) (*gatingv1alpha1.Gate, error) {
	return r.Gates.Gates(ns).Get(name)
}

// ReferenceHandler enqueues every gate that references gates when any gate's own references
// change, so that each gate of a cycle that forms or breaks reports it.
func ReferenceHandler(gates gatinglisters.GateLister, q handler.Enqueuer) cache.ResourceEventHandler {
	enqueueAll := func() {
		all, err := gates.List(labels.Everything())
		if err != nil {
			return
		}
		for _, g := range all {
			if _, refs := g.Annotations[gatelogic.GatesAnnotation]; refs {
				q.Enqueue(handler.Key(g))
			}
		}
	}
	refs := func(g *gatingv1alpha1.Gate) (string, bool) {
		v, ok := g.Annotations[gatelogic.GatesAnnotation]
		return v, ok
	}
	return handler.Funcs[*gatingv1alpha1.Gate]{
		Add: func(g *gatingv1alpha1.Gate) {
			if _, ok := refs(g); ok {
				enqueueAll()
			}
		},
		Update: func(oldG, newG *gatingv1alpha1.Gate) {
			before, hadRefs := refs(oldG)
			after, hasRefs := refs(newG)
			if before != after || hadRefs != hasRefs {
				enqueueAll()
			}
		},
		Delete: func(g *gatingv1alpha1.Gate) {
			if _, ok := refs(g); ok {
				enqueueAll()
			}
		},
	}
}

// refsOf reads the gates a gate references from the cache.
func (r *Reconciler) refsOf(ref gatelogic.Ref) []gatelogic.Ref {
	return gatelogic.RefsFrom(r.get)(ref)
}

func (r *Reconciler) report(before *gatingv1alpha1.Gate, after gatingv1alpha1.GateStatus, out Outcome, now time.Time) {
	if out.Transitioned {
		reason, state := ReasonClosed, gatingv1alpha1.StateClosed
		if after.Open {
			reason, state = ReasonOpened, gatingv1alpha1.StateOpen
		}
		r.Recorder.Eventf(before, corev1.EventTypeNormal, reason, "%s (%s): %s", state, after.Reason, after.Message)
		r.Metrics.Transitions.WithLabelValues(before.Namespace, before.Name, string(state)).Inc()
		if r.Transitioned != nil {
			r.Transitioned(gatelogic.Ref{Namespace: before.Namespace, Name: before.Name}, now)
		}
	}
	if out.OverrideExpired {
		o := after.ExpiredOverride
		r.Recorder.Eventf(before, corev1.EventTypeNormal, ReasonOverrideExpired,
			"the override to %s until %s has expired; the gate is back to what it replaced: %s (remove spec.override to clear this)",
			o.State, o.Until.UTC().Format(time.RFC3339), after.Message)
	}
	if after.Reason == gatingv1alpha1.ReasonInvalid && before.Status.Reason != gatingv1alpha1.ReasonInvalid {
		r.Recorder.Eventf(before, corev1.EventTypeWarning, ReasonInvalidSpec, "%s", after.Message)
	}
	if c := conditions.Get(after.Conditions, conditions.Stalled); c != nil && c.Reason == gatingv1alpha1.ReasonGateCycle {
		if was := conditions.Get(before.Status.Conditions, conditions.Stalled); was == nil || was.Message != c.Message {
			r.Recorder.Eventf(before, corev1.EventTypeWarning, gatingv1alpha1.ReasonGateCycle, "%s", c.Message)
		}
	}
}

// heldListWait is how long to wait before writing a status that differs from the current one
// only in its held objects; zero when it differs in more, or not at all.
func (r *Reconciler) heldListWait(key string, current, next gatingv1alpha1.GateStatus, now time.Time) time.Duration {
	if equality.Semantic.DeepEqual(current, next) {
		return 0
	}
	next.Held, next.Holding = current.Held, current.Holding
	if !equality.Semantic.DeepEqual(current, next) {
		return 0
	}
	return r.sinceLastWrite(key, now)
}

// sinceLastWrite is how long, within HeldListInterval of the last status write, until the
// interval ends; zero when it has.
func (r *Reconciler) sinceLastWrite(key string, now time.Time) time.Duration {
	last, ok := r.lastWrite.Load(key)
	if !ok {
		return 0
	}
	return max(HeldListInterval-now.Sub(last.(time.Time)), 0)
}

// minPositive is the smaller of two requeue delays, zero meaning none.
func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// statusRejected handles a status the API server refused as invalid, which retrying cannot fix:
// it writes the smallest status that says so (closed, Stalled, with the API server's words), so
// the gate and its targets show why, records a Warning Event, and stops retrying until the gate
// changes. A gate never goes without a status silently.
func (r *Reconciler) statusRejected(ctx context.Context, g *gatingv1alpha1.Gate, next *gatingv1alpha1.Gate, rejected error, now time.Time) error {
	why := text.TruncateBytes(rejected.Error(), MaxMessage/2)
	r.Recorder.Eventf(g, corev1.EventTypeWarning, ReasonStatusRejected, "the API server rejected the gate's status, so the gate stays closed until its spec changes: %s", why)
	next.Status = RejectedStatus(g, next.Status, why, now)
	if _, _, err := gateStatus.Write(ctx, r.Client.GatingV1alpha1().Gates(g.Namespace), g, next); err != nil {
		return controller.Permanent(fmt.Errorf("write Gate status: %w; reporting it failed too: %v", rejected, err))
	}
	return controller.Permanent(fmt.Errorf("write Gate status: %w", rejected))
}
