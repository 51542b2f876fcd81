// Package healthcheck reconciles HealthChecks: it computes the health of their targets from
// watch caches, writes it to status, and publishes it as a CommitStatus when asked to.
package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	healthlisters "github.com/sluicehq/sluice/api/generated/listers/health/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/sources"
	"github.com/sluicehq/sluice/health-controller/internal/userlib"
	"github.com/sluicehq/sluice/health-controller/internal/verdict"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/pkg/text"
)

// FieldManager writes HealthCheck status and CommitStatus objects.
const FieldManager = "health-controller"

// Additional states reported by the state metric, besides the verdict states.
const (
	stateWaiting   = healthv1alpha1.ReasonWaitingForWatches
	stateStalled   = "Stalled"
	stateSuspended = "Suspended"
)

// Watches are the dynamic watches the reconciler reads targets from: a *dynamicwatch.Watcher,
// or a fake in unit tests.
type Watches interface {
	Reader
	// StateFor is State for one owner: synced once the cache keeps what owner reads.
	StateFor(owner string, s dynamicwatch.Scope) (synced bool, err error)
	AddNeeds(owner string, needs ...dynamicwatch.Need)
	SetNeeds(owner string, needs ...dynamicwatch.Need)
	Owned(owner string) []dynamicwatch.Scope
	Release(owner string)
	Stats() []dynamicwatch.ScopeStats
}

// maxEventMessage bounds the message of an Event.
const maxEventMessage = 1024

// DefaultTimeout is how long targets may stay unhealthy when spec.timeout is not set; the CRD
// defaults the field to the same value.
const DefaultTimeout = 5 * time.Minute

// Reconciler computes the health of one HealthCheck per call.
type Reconciler struct {
	Lister   healthlisters.HealthCheckLister
	Client   sluice.Interface
	Watcher  Watches
	Mapper   Mapper
	Compiler *cel.Compiler
	Builtin  *health.Layer
	Library  *userlib.Library
	Recorder record.EventRecorder
	Metrics  *Metrics
	Log      *slog.Logger
	// AllowCrossNamespaceRefs lets targets and sources live in other namespaces than the
	// HealthCheck.
	AllowCrossNamespaceRefs bool
	// Clock is the time; the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock

	index        *index
	undiscovered sync.Map // keys of HealthChecks that name a kind the server does not serve
}

// New returns a Reconciler; set the exported fields before the first Reconcile.
func New() *Reconciler { return &Reconciler{index: newIndex()} }

// Owners returns the keys of the HealthChecks that read the object of an event on a watched
// scope, before or after it: the keys to enqueue.
func (r *Reconciler) Owners(s dynamicwatch.Scope, old, new *unstructured.Unstructured) []string {
	return r.index.owners(s, old, new)
}

// Reconcile computes and records the health of the HealthCheck named by key.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	l, found, err := reconcile.Load(key, r.get, func(hc *healthv1alpha1.HealthCheck) bool { return hc.Spec.Suspend })
	if err != nil {
		return controller.Result{}, err
	}
	if !found {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		r.forget(key, ns, name)
		return controller.Result{}, nil
	}
	cached, hc := l.Cached, l.Next
	if l.ReportSuspend(&hc.Status.Conditions) {
		r.suspended(key, hc, l.Suspend)
		return controller.Result{}, r.writeStatus(ctx, cached, hc)
	}

	resolver, reason, err := r.resolver(hc)
	if err != nil {
		return controller.Result{}, r.stall(ctx, cached, hc, reason, err)
	}
	p := newPlan(hc, r.Mapper, r.AllowCrossNamespaceRefs)
	if err := p.addTargets(); err != nil {
		return controller.Result{}, err
	}
	if len(p.invalid) > 0 {
		return controller.Result{}, r.stall(ctx, cached, hc, healthv1alpha1.ReasonInvalidTarget, errors.New(strings.Join(p.invalid, "; ")))
	}
	complete, err := r.watch(key, p, resolver)
	if err != nil {
		return controller.Result{}, err
	}
	if waiting := r.unsynced(key, p); !complete || len(waiting) > 0 {
		r.waitForWatches(hc, waiting)
		return controller.Result{}, r.writeStatus(ctx, cached, hc)
	}
	return r.decide(ctx, cached, hc, p, resolver)
}

// suspended reports a suspended HealthCheck. Its health is not evaluated, so it is not called
// healthy: a HEALTHY true from before the suspension would be stale.
func (r *Reconciler) suspended(key string, hc *healthv1alpha1.HealthCheck, s suspend.State) {
	r.release(key)
	st := &hc.Status
	gen := hc.Generation
	st.ObservedGeneration = gen
	st.Healthy = false
	st.Summary = healthv1alpha1.SummarySuspended
	// The soak and timeout clocks start over once it is resumed: nothing was observed meanwhile.
	st.HealthySince, st.UnhealthySince = nil, nil
	msg := "suspended (" + text.TruncateBytes(s.Message, 512) + "): health is not evaluated until it is resumed"
	if st.LastHealthyTime != nil {
		msg += "; last healthy at " + st.LastHealthyTime.UTC().Format(time.RFC3339)
		if st.LastHealthyRevision != "" {
			msg += " for revision " + st.LastHealthyRevision
		}
	}
	conditions.Set(&st.Conditions, gen, conditions.Ready, metav1.ConditionUnknown, stateSuspended, msg)
	conditions.Remove(&st.Conditions, conditions.Reconciling)
	conditions.Remove(&st.Conditions, conditions.Stalled)
	r.Metrics.setState(hc, stateSuspended)
}

// waitForWatches reports that the watches have not listed yet: computing health from half-filled
// caches could report objects as missing. The watches call back once they have listed.
func (r *Reconciler) waitForWatches(hc *healthv1alpha1.HealthCheck, waiting []string) {
	st := &hc.Status
	gen := hc.Generation
	msg := "waiting for the watches to list"
	if len(waiting) > 0 {
		msg += ": " + strings.Join(waiting, ", ")
	}
	conditions.MarkReconciling(&st.Conditions, gen, healthv1alpha1.ReasonWaitingForWatches, msg)
	if st.ObservedGeneration != gen {
		// The spec changed: the soak and timeout clocks start over at the next evaluation.
		st.HealthySince, st.UnhealthySince = nil, nil
	}
	st.ObservedGeneration = gen
	r.Metrics.setState(hc, stateWaiting)
}

// decide evaluates the targets, writes the verdict, and publishes it.
func (r *Reconciler) decide(ctx context.Context, cached, hc *healthv1alpha1.HealthCheck, p *plan, resolver *health.Resolver) (controller.Result, error) {
	start := time.Now()
	resources := r.evaluate(p, resolver)
	r.Metrics.Duration.Observe(time.Since(start).Seconds())

	revision, commit, revErr := r.revision(hc, p)
	v := verdict.Decide(verdict.Input{
		Now: r.Clock.Now(), Generation: hc.Generation, Revision: revision, Previous: cached.Status, Resources: resources,
		Timeout: duration(hc.Spec.Timeout, DefaultTimeout), SoakTime: duration(hc.Spec.SoakTime, 0),
	})
	r.apply(hc, v, revision)

	pubErr := r.publish(ctx, hc, p, v, commit, revErr)
	r.Metrics.setState(hc, string(v.State))
	r.Metrics.setCounts(hc, v.Counts)
	if err := r.writeStatus(ctx, cached, hc); err != nil {
		return controller.Result{}, err
	}
	r.events(hc, &cached.Status, v)
	if pubErr != nil {
		return controller.Result{}, pubErr
	}
	return controller.Result{RequeueAfter: v.RequeueAfter}, nil
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

// stall reports input a person must fix. Retrying cannot help; a change to the HealthCheck or to
// the user library enqueues it again.
func (r *Reconciler) stall(ctx context.Context, cached, hc *healthv1alpha1.HealthCheck, reason string, cause error) error {
	before := &cached.Status
	if reason == healthv1alpha1.ReasonInvalidCELExpression {
		r.Metrics.CELErrors.WithLabelValues("compile").Inc()
	}
	if c := conditions.Get(before.Conditions, conditions.Stalled); c == nil || c.Reason != reason || c.Message != cause.Error() {
		r.Recorder.Event(hc, corev1.EventTypeWarning, reason, text.TruncateBytes(cause.Error(), maxEventMessage))
	}
	r.release(hc.Namespace + "/" + hc.Name)
	conditions.MarkStalled(&hc.Status.Conditions, hc.Generation, reason, cause.Error())
	if hc.Status.ObservedGeneration != hc.Generation {
		hc.Status.HealthySince, hc.Status.UnhealthySince = nil, nil
	}
	hc.Status.ObservedGeneration = hc.Generation
	r.Metrics.setState(hc, stateStalled)
	if err := r.writeStatus(ctx, cached, hc); err != nil {
		return err
	}
	return controller.Permanent(cause)
}

// watch starts the watches the plan needs, expands Kustomizations and Applications from their
// caches, and records what the HealthCheck reads so that events reach it. It returns false while a
// source has not listed yet. The watches keep of each object only the fields the HealthCheck's
// checks read (see plan.needs).
func (r *Reconciler) watch(key string, p *plan, resolver *health.Resolver) (bool, error) {
	reads := health.NewEvaluator(r.Compiler, resolver).Reads
	// Add, not Set: until the sources are read, the watches of their objects must not stop.
	r.Watcher.AddNeeds(key, p.needs(reads)...)
	rd := ownerReader{watches: r.Watcher, owner: key}
	complete := true
	for _, src := range p.sources {
		ok, err := p.expand(rd, src)
		if err != nil {
			return false, err
		}
		complete = complete && ok
	}
	r.index.set(key, p.interests)
	if complete {
		r.Watcher.SetNeeds(key, p.needs(reads)...)
	} else {
		r.Watcher.AddNeeds(key, p.needs(reads)...)
	}
	if p.undiscovered || (p.hc.Spec.CommitStatus != nil && !p.commitStatusServed) {
		r.undiscovered.Store(key, struct{}{})
	} else {
		r.undiscovered.Delete(key)
	}
	return complete, nil
}

// unsynced names the scopes that have neither listed nor failed.
func (r *Reconciler) unsynced(key string, p *plan) []string {
	var out []string
	for s := range p.interests {
		if synced, err := r.Watcher.StateFor(key, s); !synced && err == nil {
			out = append(out, s.String())
		}
	}
	sort.Strings(out)
	return out
}

// checkSource says where the check that failed to evaluate is kept, which is where to fix it.
func (r *Reconciler) checkSource(s health.Source) string {
	switch s {
	case health.SourceSpec:
		return "spec.healthCheckExprs"
	case health.SourceUser:
		return "user library ConfigMap " + r.Library.Ref()
	}
	return string(s)
}

// evaluate computes the health of every target object once.
func (r *Reconciler) evaluate(p *plan, resolver *health.Resolver) []healthv1alpha1.ResourceHealth {
	e := health.NewEvaluator(r.Compiler, resolver)
	rd := r.reads(p.hc)
	seen := map[string]bool{}
	var out []healthv1alpha1.ResourceHealth
	add := func(rh healthv1alpha1.ResourceHealth) {
		group := rh.APIVersion
		if i := strings.LastIndex(group, "/"); i >= 0 {
			group = group[:i]
		} else {
			group = ""
		}
		id := group + "|" + rh.Kind + "|" + rh.Namespace + "|" + rh.Name
		if seen[id] {
			return
		}
		seen[id] = true
		out = append(out, rh)
	}
	evaluate := func(u *unstructured.Unstructured) {
		res := e.Evaluate(u)
		if res.Status == health.Unknown {
			if m, ok := resolver.Match(u.GroupVersionKind()); ok {
				r.Metrics.CELErrors.WithLabelValues("evaluation").Inc()
				res.Message = r.checkSource(m.Source) + ": " + res.Message
			}
		}
		add(healthv1alpha1.ResourceHealth{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(),
			Status: healthv1alpha1.ResourceStatus(res.Status), Message: res.Message})
	}
	for _, rh := range p.results {
		add(rh)
	}
	for _, o := range p.objects {
		rh := healthv1alpha1.ResourceHealth{APIVersion: o.kind.gvk.GroupVersion().String(), Kind: o.kind.gvk.Kind, Namespace: o.namespace, Name: o.name}
		if synced, err := rd.State(o.kind.scope); !synced {
			rh.Status, rh.Message = healthv1alpha1.StatusUnknown, watchProblem(o.kind.scope, err)
			add(rh)
			continue
		}
		u, found, err := rd.Get(o.kind.scope, o.namespace, o.name)
		switch {
		case err != nil:
			rh.Status, rh.Message = healthv1alpha1.StatusUnknown, err.Error()
			add(rh)
		case !found:
			rh.Status, rh.Message = healthv1alpha1.StatusNotFound, "not found"
			add(rh)
		default:
			evaluate(u)
		}
	}
	for _, s := range p.selections {
		if synced, err := rd.State(s.kind.scope); !synced {
			add(healthv1alpha1.ResourceHealth{APIVersion: s.kind.gvk.GroupVersion().String(), Kind: s.kind.gvk.Kind, Namespace: s.kind.scope.Namespace,
				Status: healthv1alpha1.StatusUnknown, Message: watchProblem(s.kind.scope, err)})
			continue
		}
		objs, err := rd.List(s.kind.scope, s.selector)
		if err != nil {
			add(healthv1alpha1.ResourceHealth{APIVersion: s.kind.gvk.GroupVersion().String(), Kind: s.kind.gvk.Kind, Namespace: s.kind.scope.Namespace,
				Status: healthv1alpha1.StatusUnknown, Message: err.Error()})
			continue
		}
		for _, u := range objs {
			evaluate(u)
		}
	}
	return out
}

// revision returns the revision the targets run, and its commit when spec.commitStatus needs
// one. Without spec.commitStatus the first Kustomization or Application target, if any, tells
// the revision, for status only.
func (r *Reconciler) revision(hc *healthv1alpha1.HealthCheck, p *plan) (revision, commit string, err error) {
	if cs := hc.Spec.CommitStatus; cs != nil {
		if cs.Revision.Fixed != "" {
			return cs.Revision.Fixed, cs.Revision.Fixed, nil
		}
		if p.revision == nil {
			return "", "", errors.New("spec.commitStatus.revision names no source")
		}
		return readRevision(r.reads(hc), *p.revision)
	}
	for _, src := range p.sources {
		if rev, _, _ := readRevision(r.reads(hc), src); rev != "" {
			return rev, "", nil
		}
	}
	return "", "", nil
}

func readRevision(rd Reader, src source) (revision, commit string, err error) {
	if !src.served {
		return "", "", fmt.Errorf("the API server does not serve %s, so the revision of %s/%s cannot be read", describeKind(src.gk.WithVersion("")), src.namespace, src.name)
	}
	if synced, err := rd.State(src.kind.scope); !synced {
		return "", "", errors.New(watchProblem(src.kind.scope, err))
	}
	obj, found, err := rd.Get(src.kind.scope, src.namespace, src.name)
	if err != nil {
		return "", "", err
	}
	if !found {
		return "", "", fmt.Errorf("%s %s/%s not found", src.gk.Kind, src.namespace, src.name)
	}
	if src.gk == sources.Kustomization {
		return sources.KustomizationRevision(obj)
	}
	return sources.ApplicationRevision(obj)
}

// apply writes the verdict into status and conditions.
func (r *Reconciler) apply(hc *healthv1alpha1.HealthCheck, v verdict.Verdict, revision string) {
	st := &hc.Status
	gen := hc.Generation
	st.ObservedGeneration = gen
	st.ObservedRevision = revision
	st.Healthy = v.Healthy
	st.Summary = v.Summary
	st.Counts = v.Counts
	st.Resources = v.Resources
	st.LastHealthyTime = v.LastHealthyTime
	st.LastHealthyRevision = v.LastHealthyRevision
	st.HealthySince = v.HealthySince
	st.UnhealthySince = v.UnhealthySince
	switch v.State {
	case verdict.Healthy:
		conditions.MarkReady(&st.Conditions, gen, string(v.State), v.Message)
	case verdict.Failed, verdict.TimedOut:
		conditions.MarkNotReady(&st.Conditions, gen, string(v.State), v.Message)
	default:
		conditions.MarkReconciling(&st.Conditions, gen, string(v.State), v.Message)
	}
}

// events reports transitions of the verdict, not every evaluation.
func (r *Reconciler) events(hc *healthv1alpha1.HealthCheck, before *healthv1alpha1.HealthCheckStatus, v verdict.Verdict) {
	prev := conditions.Get(before.Conditions, conditions.Ready)
	if prev != nil && prev.Reason == string(v.State) && before.ObservedRevision == hc.Status.ObservedRevision {
		return
	}
	r.Log.Info("health changed", "healthcheck", hc.Namespace+"/"+hc.Name, "state", v.State,
		"revision", hc.Status.ObservedRevision, "summary", v.Description)
	switch v.State {
	case verdict.Healthy:
		r.Recorder.Event(hc, corev1.EventTypeNormal, string(v.State), text.TruncateBytes(v.Message, maxEventMessage))
	case verdict.Failed, verdict.TimedOut:
		r.Recorder.Event(hc, corev1.EventTypeWarning, string(v.State), text.TruncateBytes(v.Message, maxEventMessage))
	}
}

// healthCheckStatus writes HealthCheck status as the controller.
var healthCheckStatus = reconcile.StatusWriter[*healthv1alpha1.HealthCheck, healthv1alpha1.HealthCheckStatus]{
	Kind: "HealthCheck", FieldManager: FieldManager,
	Status: func(hc *healthv1alpha1.HealthCheck) *healthv1alpha1.HealthCheckStatus { return &hc.Status },
}

// writeStatus stores hc's status unless it equals cached's. A HealthCheck deleted meanwhile has
// nothing left to write.
func (r *Reconciler) writeStatus(ctx context.Context, cached, hc *healthv1alpha1.HealthCheck) error {
	_, _, err := healthCheckStatus.Write(ctx, r.Client.HealthV1alpha1().HealthChecks(hc.Namespace), cached, hc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *Reconciler) get(ns, name string) (*healthv1alpha1.HealthCheck, error) {
	return r.Lister.HealthChecks(ns).Get(name)
}

func (r *Reconciler) release(key string) {
	r.Watcher.Release(key)
	r.index.remove(key)
	r.undiscovered.Delete(key)
}

func (r *Reconciler) forget(key, namespace, name string) {
	r.release(key)
	r.Metrics.forget(namespace, name)
}

// Undiscovered returns the keys of HealthChecks waiting for a kind to be served.
func (r *Reconciler) Undiscovered() []string {
	var keys []string
	r.undiscovered.Range(func(k, _ any) bool {
		keys = append(keys, k.(string))
		return true
	})
	return keys
}

func duration(d *metav1.Duration, otherwise time.Duration) time.Duration {
	if d == nil {
		return otherwise
	}
	return d.Duration
}
