package holding

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/metrics"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/text"
)

// Event reasons on targets. A target held or released as its gates say gets no Event: its gate
// reports how many it holds (gatestatus.ReasonHolding), and the target's annotations say why. Events
// here are for what needs a person's eye on the object itself.
const (
	ReasonHoldOverridden = "HoldOverridden"
	ReasonGateMissing    = "GateMissing"
	ReasonInvalidGates   = "InvalidGates"
	ReasonHoldFailed     = "HoldFailed"
	ReasonHoldReduced    = "HoldReduced"
)

// StaleGrace is how long a target waits for a referenced gate whose current spec has not been
// evaluated (a new gate, or one just edited) before its status counts as closed. The
// gate-controller evaluates the gate itself, within milliseconds, so the wait keeps an edit to an
// open gate, or a gate created together with its targets, from holding and releasing every object
// behind it; the bound keeps a gate that cannot be evaluated failing closed.
const StaleGrace = 10 * time.Second

// Reconciler holds and releases targets as their gates say.
type Reconciler struct {
	Registry *Registry
	Gates    gatinglisters.GateLister
	Dynamic  dynamic.Interface
	Recorder record.EventRecorder
	Metrics  *metrics.Gates
	Latency  *Latency
	// Followers are the targets that wait on their source's revision for an approval.
	Followers *Followers
	Log       *slog.Logger
	// Clock is the time; the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock

	staleSince sync.Map // gate ref -> staleness
	pinChecked sync.Map // target key -> true once its source was checked for a pin to remove
}

type staleness struct {
	generation int64
	since      time.Time
}

// maxRereads bounds how often one reconcile reads a target again after a conflict: a target that
// changes faster than a read and a write can follow is retried with the queue's backoff.
const maxRereads = 3

// Reconcile brings one target, keyed by Key, in line with its gates. It decides on the cached
// target and writes with that version as a precondition. Another controller writing the target
// meanwhile (kustomize-controller writes its status at every reconcile) makes the write fail with
// a conflict: the target is then read again from the API server and decided anew at once, rather
// than waiting for the cache and the queue's backoff, so a hold lands while Flux is busy.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	gr, name, ok := SplitKey(key)
	if !ok {
		return controller.Result{}, controller.Permanent(fmt.Errorf("malformed target key %q", key))
	}
	w, ok := r.Registry.Get(gr)
	if !ok {
		return controller.Result{}, nil
	}
	obj, exists, err := w.Informer.GetIndexer().GetByKey(name)
	if err != nil {
		return controller.Result{}, err
	}
	m, isMeta := obj.(*metav1.PartialObjectMetadata)
	if !exists || !isMeta {
		r.Latency.Done(key, r.now())
		return controller.Result{}, r.unpinDeleted(ctx, key)
	}
	for rereads := 0; ; rereads++ {
		res, conflict, err := r.enforce(ctx, w, m, key)
		if conflict == nil {
			return res, err
		}
		r.Metrics.HoldConflicts.WithLabelValues(w.GroupResource().String()).Inc()
		if rereads == maxRereads {
			return controller.Result{}, fmt.Errorf("%s changed while being held or released, %d times in a row; retrying: %w", key, rereads+1, conflict)
		}
		if m, err = r.reread(ctx, w, m); apierrors.IsNotFound(err) {
			// Deleted: the informer's delete brings the key back, to remove a pin left behind.
			return controller.Result{}, nil
		} else if err != nil {
			return controller.Result{}, fmt.Errorf("read %s again after a conflict: %w", key, err)
		}
	}
}

// enforce decides on the target m, as read, and writes the decision with m's version as a
// precondition. conflict is the API server's refusal when m is no longer the target's current
// version (or the target is gone): nothing was written, and the caller decides again on a newer
// read.
func (r *Reconciler) enforce(ctx context.Context, w *Watched, m *metav1.PartialObjectMetadata, key string) (res controller.Result, conflict, err error) {
	v, wait, err := r.verdict(ctx, w, m)
	if err != nil {
		return controller.Result{}, nil, err
	}
	if wait > 0 {
		return controller.Result{RequeueAfter: wait}, nil, nil
	}
	plan := hold.Decide(hold.Target{Annotations: m.GetAnnotations(), Owned: hold.OwnedFields(m.GetManagedFields())}, w.Mode, v.Verdict)
	if !plan.Apply {
		r.Latency.Done(key, r.now())
		return controller.Result{}, nil, r.afterHold(ctx, w, m, key, v)
	}
	ref := hold.Ref{
		APIVersion: w.APIVersion(), Kind: w.Kind.Kind, Namespace: m.Namespace, Name: m.Name,
		UID: m.UID, ResourceVersion: m.ResourceVersion,
	}
	err = r.apply(ctx, w, m, ref, plan)
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return controller.Result{}, err, nil
	case err != nil:
		r.event(w, m, corev1.EventTypeWarning, ReasonHoldFailed, "cannot hold or release: %s", text.TruncateBytes(err.Error(), maxEventError))
		return controller.Result{}, nil, fmt.Errorf("apply hold on %s: %w", key, err)
	}
	r.report(key, w, m, plan, v)
	return controller.Result{}, nil, r.afterHold(ctx, w, m, key, v)
}

// reread reads the target's metadata from the API server, bypassing the cache, which has not
// seen the change that made the write conflict yet.
func (r *Reconciler) reread(ctx context.Context, w *Watched, m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
	u, err := r.Dynamic.Resource(w.GVR).Namespace(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	fresh := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta}
	raw, _ := u.Object["metadata"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &fresh.ObjectMeta); err != nil {
		return nil, fmt.Errorf("read the metadata of %s/%s: %w", m.Namespace, m.Name, err)
	}
	return fresh, nil
}

// afterHold removes a pin the target no longer needs, now that the hold its gates ask for (if
// any) is in place: unpinned first, the source could fetch an unapproved commit that a released
// target would apply.
func (r *Reconciler) afterHold(ctx context.Context, w *Watched, m metav1.Object, key string, v verdict) error {
	if !v.unpin {
		return nil
	}
	return r.unpinSource(ctx, w, m, key)
}

// maxEventError bounds an API error quoted in an Event.
const maxEventError = 1024

// apply writes the plan. A hold whose annotations the API server refuses (the target's own
// annotations leave no room) falls back to spec.suspend alone: a hold never fails open.
func (r *Reconciler) apply(ctx context.Context, w *Watched, m *metav1.PartialObjectMetadata, ref hold.Ref, plan hold.Plan) error {
	target := r.Dynamic.Resource(w.GVR).Namespace(m.Namespace)
	opts := metav1.ApplyOptions{FieldManager: hold.FieldManager, Force: true}
	applied, err := target.Apply(ctx, m.Name, plan.Desired.ApplyObject(ref), opts)
	if err == nil {
		return specFieldKept(w, plan, applied)
	}
	rec := plan.Desired.Record
	if rec == nil || rec.Yielded || len(rec.Set) == 0 || !(apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err)) {
		return err
	}
	if _, fallbackErr := target.Apply(ctx, m.Name, hold.SpecOnlyApplyObject(ref), opts); fallbackErr != nil {
		return fmt.Errorf("%w; holding by spec.suspend alone failed too: %v", err, fallbackErr)
	}
	r.event(w, m, corev1.EventTypeWarning, ReasonHoldReduced,
		"held by spec.suspend alone: the API server refused the hold's annotations (%s); make room in the object's annotations to see the reason on it",
		text.TruncateBytes(err.Error(), maxEventError))
	return nil
}

type verdict struct {
	hold.Verdict
	missing []gate.Ref
	invalid bool
	// unpin is true when no gate approves a revision the target's source could be pinned to.
	unpin bool
}

// verdict reads the target's gates, and its source's revision when a closed gate approves
// revisions. It asks the caller to wait while a referenced gate's current spec has not been
// evaluated yet, and fails only when the revision cannot be read for now.
func (r *Reconciler) verdict(ctx context.Context, w *Watched, m metav1.Object) (verdict, time.Duration, error) {
	key := Key(w.GroupResource(), m)
	v, refs, require, wait := r.gateVerdict(w, m)
	if refs == nil || wait > 0 {
		v.unpin = wait == 0
		return v, wait, nil
	}
	subject := gate.Subject{Now: r.now()}
	if gate.NeedsRevision(refs, r.lookup) {
		var err error
		if subject.Revision, subject.Unknown, err = r.revision(ctx, w, m, key, refs); err != nil {
			return verdict{}, 0, err
		}
	}
	a := gate.AllowsFor(subject, refs, require, r.lookup)
	var denying []string
	for _, ref := range append(slices.Clone(a.Missing), a.Denying...) {
		denying = append(denying, ref.String())
	}
	held := hold.Verdict{Hold: !a.Allowed, Reason: a.Message, Gates: denying}
	held.DenyManualSyncs = held.Hold && w.GVR.GroupVersion().WithKind(w.Kind.Kind).GroupKind() == hold.ArgoCDApplications && r.denyManualSyncs(a.Denying)
	return verdict{Verdict: held, missing: a.Missing, unpin: !gate.NeedsRevision(refs, r.lookup)}, 0, nil
}

// denyManualSyncs reports whether one of the denying gates says a held Application may not be
// synced by hand. A missing gate says nothing: it holds, and leaves manual syncs as they are.
func (r *Reconciler) denyManualSyncs(denying []gate.Ref) bool {
	for _, ref := range denying {
		if g, err := r.lookup(ref.Namespace, ref.Name); err == nil && g.Spec.ManualSyncs == gatingv1alpha1.ManualSyncsDeny {
			return true
		}
	}
	return false
}

// gateVerdict reads the gates a target references. It returns the refs to decide on, or nil refs
// with the verdict already made (no gates, or gates that cannot be read), or a wait.
func (r *Reconciler) gateVerdict(w *Watched, m metav1.Object) (verdict, []gate.Ref, gate.Require, time.Duration) {
	annotations := m.GetAnnotations()
	value, targeted := annotations[gate.GatesAnnotation]
	if !targeted {
		return verdict{}, nil, "", 0
	}
	refs, refsErr := gate.ParseRefs(value, m.GetNamespace())
	require, requireErr := gate.ParseRequire(annotations[gate.RequireAnnotation])
	if refsErr != nil || requireErr != nil {
		// Fail closed: a target whose gates cannot be read waits until someone fixes every problem.
		var problems []string
		for _, err := range []error{refsErr, requireErr} {
			if err != nil {
				problems = append(problems, err.Error())
			}
		}
		return verdict{Verdict: hold.Verdict{Hold: true, Reason: "held: " + strings.Join(problems, "; ")}, invalid: true}, nil, "", 0
	}
	if isGate(w) {
		// A gate is never held by itself: the references that lead back to it are ignored, and
		// the gate reports the cycle in its status.
		refs, _ = gate.Acyclic(gate.Ref{Namespace: m.GetNamespace(), Name: m.GetName()}, refs, r.refsOf)
		if len(refs) == 0 {
			return verdict{}, nil, "", 0
		}
	}
	if wait := r.waitForStaleGates(refs); wait > 0 {
		return verdict{}, nil, "", wait
	}
	return verdict{}, refs, require, 0
}

func (r *Reconciler) lookup(ns, name string) (*gatingv1alpha1.Gate, error) {
	return r.Gates.Gates(ns).Get(name)
}

func (r *Reconciler) refsOf(ref gate.Ref) []gate.Ref { return gate.RefsFrom(r.lookup)(ref) }

// isGate reports whether w is the Gate kind, which can reference gates too.
func isGate(w *Watched) bool {
	return w.GVR.Group == gatingv1alpha1.SchemeGroupVersion.Group && w.Kind.Kind == "Gate"
}

func (r *Reconciler) waitForStaleGates(refs []gate.Ref) time.Duration {
	now := r.now()
	var wait time.Duration
	for _, ref := range refs {
		g, err := r.Gates.Gates(ref.Namespace).Get(ref.Name)
		if err != nil || g.Status.ObservedGeneration == g.Generation {
			r.staleSince.Delete(ref)
			continue
		}
		seen, _ := r.staleSince.LoadOrStore(ref, staleness{generation: g.Generation, since: now})
		s := seen.(staleness)
		if s.generation != g.Generation {
			s = staleness{generation: g.Generation, since: now}
			r.staleSince.Store(ref, s)
		}
		if left := StaleGrace - now.Sub(s.since); left > wait {
			wait = left
		}
	}
	return wait
}

func (r *Reconciler) report(key string, w *Watched, m metav1.Object, plan hold.Plan, v verdict) {
	if msg, ok := outcomeLog[plan.Outcome]; ok && r.Log != nil {
		attrs := []any{"target", key, "reason", v.Reason}
		if plan.Outcome == hold.OutcomeReleased {
			attrs = append(attrs, "undid", changes(plan.Previous, hold.SpecFieldOf(w.GVR.GroupVersion().WithKind(w.Kind.Kind).GroupKind())))
		}
		r.Log.Info(msg, attrs...)
	}
	if plan.Outcome == hold.OutcomeYielded {
		r.event(w, m, corev1.EventTypeWarning, ReasonHoldOverridden,
			"someone resumed it while its gates deny (%s); the gate-controller will not hold it again until they allow it", v.Reason)
	}
	if plan.Outcome == hold.OutcomeHeld || plan.Outcome == hold.OutcomeReleased {
		if d, ok := r.Latency.Done(key, r.now()); ok {
			r.Metrics.EnforcementLatency.Observe(d.Seconds())
		}
	} else {
		r.Latency.Done(key, r.now())
	}
	newReason := plan.Previous == nil || plan.Desired.Record == nil || plan.Previous.Reason != plan.Desired.Record.Reason
	switch {
	case !newReason || plan.Desired.Record == nil:
	case v.invalid:
		r.event(w, m, corev1.EventTypeWarning, ReasonInvalidGates, "%s", v.Reason)
	case len(v.missing) > 0:
		names := make([]string, len(v.missing))
		for i, ref := range v.missing {
			names[i] = ref.String()
		}
		r.event(w, m, corev1.EventTypeWarning, ReasonGateMissing, "held until these gates exist: %s", text.TruncateBytes(strings.Join(names, ", "), gate.MaxReason))
	}
}

var outcomeLog = map[hold.Outcome]string{
	hold.OutcomeHeld:     "held",
	hold.OutcomeReleased: "released",
	hold.OutcomeYielded:  "resumed by someone while held; not holding it again until its gates allow",
}

func changes(r *hold.Record, field hold.SpecField) string {
	if r == nil || len(r.Set) == 0 {
		return "nothing (someone else's suspension stays)"
	}
	var s string
	for i, c := range r.Set {
		if i > 0 {
			s += " and "
		}
		switch c {
		case hold.ChangeAnnotation:
			s += "the suspend annotation"
		case hold.ChangeSpec:
			s += field.Name
		}
	}
	return s
}

func (r *Reconciler) event(w *Watched, m metav1.Object, eventType, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{
		APIVersion: w.APIVersion(), Kind: w.Kind.Kind, Namespace: m.GetNamespace(), Name: m.GetName(),
		UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
	}
	r.Recorder.Eventf(ref, eventType, reason, format, args...)
}

func (r *Reconciler) now() time.Time { return r.Clock.Now() }
