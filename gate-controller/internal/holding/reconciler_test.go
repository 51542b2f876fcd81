package holding

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/gate-controller/internal/metrics"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	"github.com/sluicehq/sluice/pkg/suspend"
)

var kustomizations = kinds.Kind{
	GVR:  schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"},
	Kind: "Kustomization", Namespaced: true, Mode: hold.ModeBoth,
}

type fixture struct {
	r       *Reconciler
	watched *Watched
	gates   cache.Indexer
	applied []*unstructured.Unstructured
	fail    error
	// failures, when set, fail the applies in turn; nil entries succeed.
	failures []error
	// live is the target as the API server has it now, which a read returns; when nil, reads
	// go to the fake's tracker.
	live    *unstructured.Unstructured
	reads   int
	events  *record.FakeRecorder
	metrics *metrics.Gates
	now     time.Time
}

func newFixture(t *testing.T) *fixture { return newFixtureOf(t, kustomizations) }

func newFixtureOf(t *testing.T, kind kinds.Kind) *fixture {
	f := &fixture{events: record.NewFakeRecorder(20), now: time.Date(2025, 6, 13, 17, 0, 0, 0, time.UTC)}
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, Indexers)
	f.watched = &Watched{Kind: kind, Informer: informer}
	registry := NewRegistry()
	require.True(t, registry.Add(f.watched))
	f.gates = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("patch", kind.GVR.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		require.Equal(t, types.ApplyPatchType, p.GetPatchType())
		u := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(p.GetPatch(), &u.Object))
		f.applied = append(f.applied, u)
		if len(f.failures) > 0 {
			err := f.failures[0]
			f.failures = f.failures[1:]
			return true, u, err
		}
		return true, u, f.fail
	})
	client.PrependReactor("get", kind.GVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		f.reads++
		if f.live == nil {
			return false, nil, nil
		}
		return true, f.live.DeepCopy(), nil
	})
	f.metrics = metrics.New(prometheus.NewRegistry())
	f.r = &Reconciler{
		Registry: registry, Gates: gatinglisters.NewGateLister(f.gates), Dynamic: client, Recorder: f.events,
		Metrics: f.metrics, Latency: NewLatency(), Clock: clockFunc(func() time.Time { return f.now }),
	}
	return f
}

func (f *fixture) gate(t *testing.T, name string, open bool, generation, observed int64) {
	status := metav1.ConditionFalse
	if open {
		status = metav1.ConditionTrue
	}
	g := &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Generation: generation},
		Status: gatingv1alpha1.GateStatus{
			ObservedGeneration: observed, Open: open, Reason: gatingv1alpha1.ReasonManual, Message: "release sign-off",
			Conditions: []metav1.Condition{{Type: gatingv1alpha1.ConditionOpen, Status: status, Reason: gatingv1alpha1.ReasonManual}},
		},
	}
	require.NoError(t, f.gates.Add(g))
}

func (f *fixture) target(t *testing.T, annotations map[string]string) string {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "apps", Name: "web", UID: "uid-1", ResourceVersion: "41", Annotations: annotations,
	}}
	require.NoError(t, f.watched.Informer.GetIndexer().Add(m))
	return Key(f.watched.GroupResource(), m)
}

func (f *fixture) drain() []string { return reconciletest.Events(f.events) }

func TestReconcileHoldsATargetOfAClosedGate(t *testing.T) {
	f := newFixture(t)
	f.gate(t, "prod", false, 3, 3)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod"})
	f.r.Latency.Transitioned(gate.Ref{Namespace: "apps", Name: "prod"}, f.now.Add(-2*time.Second))
	f.r.Latency.Mark(gate.Ref{Namespace: "apps", Name: "prod"}, []string{key}, f.now)

	res, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter)
	require.Len(t, f.applied, 1)
	u := f.applied[0]
	assert.Equal(t, "uid-1", string(u.GetUID()))
	assert.Equal(t, "41", u.GetResourceVersion())
	assert.Equal(t, "Kustomization", u.GetKind())
	reason := u.GetAnnotations()[suspend.Annotation]
	assert.Equal(t, "held: gate apps/prod is closed (Manual: release sign-off)", reason)
	assert.Equal(t, map[string]any{"suspend": true}, u.Object["spec"])
	assert.Empty(t, f.drain(), "no Event per held object: the gate reports the count")
	assert.Equal(t, uint64(1), histogramCount(t, f.metrics.EnforcementLatency), "the transition-to-hold latency is observed once")
}

func TestReconcileWaitsForAGateBeingReevaluatedThenFailsClosed(t *testing.T) {
	f := newFixture(t)
	// Open before the edit, generation 5 not evaluated yet.
	f.gate(t, "prod", true, 5, 4)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod"})

	res, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Equal(t, StaleGrace, res.RequeueAfter)
	assert.Empty(t, f.applied, "no hold while the controller evaluates the edit")

	f.now = f.now.Add(StaleGrace / 2)
	res, err = f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Equal(t, StaleGrace/2, res.RequeueAfter, "the grace runs from when the stale status was first seen")

	f.now = f.now.Add(StaleGrace / 2)
	_, err = f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, f.applied, 1, "a gate that is never evaluated counts as closed")
	assert.Contains(t, f.applied[0].GetAnnotations()[suspend.Annotation], "has not been evaluated yet")
}

func TestReconcileWaitsForANewGateToBeEvaluated(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.gates.Add(&gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "prod", Generation: 1}}))
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod"})
	res, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Equal(t, StaleGrace, res.RequeueAfter)
	assert.Empty(t, f.applied)

	f.gate(t, "prod", true, 1, 1) // replaces it, evaluated open
	_, err = f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Empty(t, f.applied, "created together with an open gate: never held")
}

func TestReconcileHoldsForAMissingGateAndSaysWhich(t *testing.T) {
	f := newFixture(t)
	f.gate(t, "prod", true, 1, 1)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod,gone", gate.RequireAnnotation: "all"})
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, f.applied, 1)
	rec, err := hold.ParseRecord(f.applied[0].GetAnnotations()[hold.RecordAnnotation])
	require.NoError(t, err)
	assert.Equal(t, []string{"apps/gone"}, rec.Gates, "only the gate that denies holds it")
	events := f.drain()
	assert.Contains(t, events, "Warning GateMissing held until these gates exist: apps/gone")
}

func TestReconcileRetriesWithBackoffWhenTheTargetKeepsChanging(t *testing.T) {
	f := newFixture(t)
	f.gate(t, "prod", false, 1, 1)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod"})
	f.live = liveTarget("42", map[string]string{gate.GatesAnnotation: "prod"})
	f.fail = conflict()
	_, err := f.r.Reconcile(context.Background(), key)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "changed while being held or released, 4 times in a row")
	assert.Len(t, f.applied, maxRereads+1, "each conflict is read again and decided anew, up to maxRereads")
	assert.Equal(t, maxRereads, f.reads)
	assert.Equal(t, float64(maxRereads+1), conflicts(t, f))
	assert.Empty(t, f.drain(), "nothing is reported for a hold that did not happen")
}

// A conflict is decided again on the target as the API server has it, within the same
// reconcile: the hold is written with the newer version as its precondition, at once.
func TestReconcileDecidesAgainOnAFreshReadAfterAConflict(t *testing.T) {
	f := newFixture(t)
	f.gate(t, "prod", false, 1, 1)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod"})
	f.live = liveTarget("42", map[string]string{gate.GatesAnnotation: "prod", "kustomize.toolkit.fluxcd.io/checksum": "x"})
	f.failures = []error{conflict(), nil}

	res, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Zero(t, res)
	require.Len(t, f.applied, 2)
	assert.Equal(t, "41", f.applied[0].GetResourceVersion(), "first from the cache")
	assert.Equal(t, "42", f.applied[1].GetResourceVersion(), "then on the version read after the conflict")
	assert.Equal(t, map[string]any{"suspend": true}, f.applied[1].Object["spec"])
	assert.Equal(t, float64(1), conflicts(t, f))
}

// The decision after a conflict is made on what the API server has, not on the cache: someone
// who resumed a held target meanwhile is respected, where the cached view would hold it again.
func TestReconcileRespectsAResumeSeenOnlyAfterAConflict(t *testing.T) {
	f := newFixture(t)
	f.gate(t, "prod", false, 1, 1)
	record := hold.Record{Gates: []string{"apps/prod"}, Reason: "held: an older reason", Set: []hold.Change{hold.ChangeAnnotation, hold.ChangeSpec}}.String()
	annotations := map[string]string{gate.GatesAnnotation: "prod", hold.RecordAnnotation: record, suspend.Annotation: "held: an older reason"}
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "apps", Name: "web", UID: "uid-1", ResourceVersion: "41", Annotations: annotations,
		ManagedFields: []metav1.ManagedFieldsEntry{ours(`{"f:metadata":{"f:annotations":{"f:gating.sluice.dev/hold":{},"f:reconcile.fluxcd.io/suspended":{}}},"f:spec":{"f:suspend":{}}}`)},
	}}
	require.NoError(t, f.watched.Informer.GetIndexer().Add(m))
	key := Key(f.watched.GroupResource(), m)
	// Someone set spec.suspend: false by hand: the controller no longer owns it.
	f.live = liveTarget("42", annotations)
	f.live.SetManagedFields([]metav1.ManagedFieldsEntry{ours(`{"f:metadata":{"f:annotations":{"f:gating.sluice.dev/hold":{},"f:reconcile.fluxcd.io/suspended":{}}}}`)})
	f.failures = []error{conflict(), nil}

	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, f.applied, 2)
	assert.Equal(t, map[string]any{"suspend": true}, f.applied[0].Object["spec"], "the cached view would have held it again")
	assert.Nil(t, f.applied[1].Object["spec"], "the fresh read yields spec.suspend to whoever resumed it")
	rec, err := hold.ParseRecord(f.applied[1].GetAnnotations()[hold.RecordAnnotation])
	require.NoError(t, err)
	assert.True(t, rec.Yielded)
	assert.Contains(t, f.drain(), "Warning HoldOverridden someone resumed it while its gates deny (held: gate apps/prod is closed (Manual: release sign-off)); the gate-controller will not hold it again until they allow it")
}

func TestReconcileStopsWhenTheTargetWasDeletedAfterAConflict(t *testing.T) {
	f := newFixture(t)
	f.gate(t, "prod", false, 1, 1)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod"})
	f.fail = conflict()
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err, "the informer's delete brings the key back")
	assert.Len(t, f.applied, 1)
	assert.Equal(t, 1, f.reads)
}

func conflict() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}, "web", nil)
}

func ours(fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: hold.FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// liveTarget is the Kustomization apps/web as the API server returns it, at resourceVersion rv.
func liveTarget(rv string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"interval": "1m"}, "status": map[string]any{"lastAppliedRevision": "main@sha1:0"}}}
	u.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	u.SetKind("Kustomization")
	u.SetNamespace("apps")
	u.SetName("web")
	u.SetUID("uid-1")
	u.SetResourceVersion(rv)
	u.SetAnnotations(annotations)
	return u
}

func conflicts(t *testing.T, f *fixture) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, f.metrics.HoldConflicts.WithLabelValues("kustomizations.kustomize.toolkit.fluxcd.io").Write(&m))
	return m.GetCounter().GetValue()
}

func TestReconcileIgnoresObjectsThatAreNotTargets(t *testing.T) {
	f := newFixture(t)
	key := f.target(t, map[string]string{"unrelated": "x"})
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	_, err = f.r.Reconcile(context.Background(), "kustomizations.kustomize.toolkit.fluxcd.io|apps/deleted")
	require.NoError(t, err)
	_, err = f.r.Reconcile(context.Background(), "widgets.unwatched.example|apps/x")
	require.NoError(t, err)
	assert.Empty(t, f.applied)
}

func TestRegistryListsWhatAGateHolds(t *testing.T) {
	f := newFixture(t)
	add := func(name string, rec *hold.Record, refs string) {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Annotations: map[string]string{gate.GatesAnnotation: refs}}}
		if rec != nil {
			m.Annotations[hold.RecordAnnotation] = rec.String()
			m.ManagedFields = []metav1.ManagedFieldsEntry{{
				Manager: hold.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:gating.sluice.dev/hold":{}}}}`)},
			}}
		}
		require.NoError(t, f.watched.Informer.GetIndexer().Add(m))
	}
	add("c", &hold.Record{Gates: []string{"apps/prod"}}, "prod")
	add("a", &hold.Record{Gates: []string{"apps/prod", "apps/qa"}}, "prod,qa")
	add("b", &hold.Record{Gates: []string{"apps/qa"}}, "prod,qa")               // held by the other gate only
	add("d", &hold.Record{Gates: []string{"apps/prod"}, Yielded: true}, "prod") // someone resumed it
	add("e", nil, "prod")                                                       // references it, not held

	held, count := f.r.Registry.Held(gate.Ref{Namespace: "apps", Name: "prod"}, 1)
	assert.Equal(t, 2, count)
	assert.Equal(t, []gatingv1alpha1.HeldObject{{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: "a"}}, held)
	assert.Len(t, f.r.Registry.Referencing(gate.Ref{Namespace: "apps", Name: "prod"}), 5)
	assert.Len(t, f.r.Registry.Referencing(gate.Ref{Namespace: "other", Name: "prod"}), 0)

	// The index follows changes: resumed by someone, c is no longer held.
	c, _, err := f.watched.Informer.GetIndexer().GetByKey("apps/c")
	require.NoError(t, err)
	resumed := c.(*metav1.PartialObjectMetadata).DeepCopy()
	resumed.Annotations[hold.RecordAnnotation] = (&hold.Record{Gates: []string{"apps/prod"}, Yielded: true}).String()
	require.NoError(t, f.watched.Informer.GetIndexer().Update(resumed))
	held, count = f.r.Registry.Held(gate.Ref{Namespace: "apps", Name: "prod"}, 10)
	assert.Equal(t, 1, count)
	assert.Equal(t, "a", held[0].Name)
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleCount()
}

var gateKind = kinds.Kind{
	GVR:  schema.GroupVersionResource{Group: "gating.sluice.dev", Version: "v1alpha1", Resource: "gates"},
	Kind: "Gate", Namespaced: true, Mode: hold.ModeAnnotation,
}

// gateTarget adds a closed gate that references refs, both as a gate and as a target.
func (f *fixture) gateTarget(t *testing.T, name, refs string) string {
	f.gate(t, name, false, 1, 1)
	obj, _, err := f.gates.GetByKey("apps/" + name)
	require.NoError(t, err)
	g := obj.(*gatingv1alpha1.Gate)
	g.Annotations = map[string]string{gate.GatesAnnotation: refs}
	require.NoError(t, f.gates.Update(g))
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: "uid-" + types.UID(name), Annotations: g.Annotations}}
	require.NoError(t, f.watched.Informer.GetIndexer().Add(m))
	return Key(f.watched.GroupResource(), m)
}

// A kustomize commonAnnotation lands gating.sluice.dev/gates: selfie on the Gate selfie itself.
func TestReconcileNeverHoldsAGateByItself(t *testing.T) {
	f := newFixtureOf(t, gateKind)
	key := f.gateTarget(t, "selfie", "selfie")
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Empty(t, f.applied, "a gate naming itself is not held")
}

func TestReconcileIgnoresTheReferencesThatCloseACycleOfGates(t *testing.T) {
	f := newFixtureOf(t, gateKind)
	a := f.gateTarget(t, "a", "b,freeze")
	b := f.gateTarget(t, "b", "a")
	f.gate(t, "freeze", false, 1, 1)

	_, err := f.r.Reconcile(context.Background(), b)
	require.NoError(t, err)
	assert.Empty(t, f.applied, "b is held only by a, which leads back to b")

	_, err = f.r.Reconcile(context.Background(), a)
	require.NoError(t, err)
	require.Len(t, f.applied, 1, "a is still held by freeze, which is not in the cycle")
	rec, err := hold.ParseRecord(f.applied[0].GetAnnotations()[hold.RecordAnnotation])
	require.NoError(t, err)
	assert.Equal(t, []string{"apps/freeze"}, rec.Gates)
	assert.NotContains(t, rec.Reason, "apps/b")
}

func TestReconcileChainOfGatesStillHolds(t *testing.T) {
	f := newFixtureOf(t, gateKind)
	a := f.gateTarget(t, "a", "b")
	f.gateTarget(t, "b", "c")
	f.gate(t, "c", false, 1, 1)
	_, err := f.r.Reconcile(context.Background(), a)
	require.NoError(t, err)
	require.Len(t, f.applied, 1, "a -> b -> c is no cycle: a is held by b")
}

func TestReconcileNamesEveryProblemOfTheGatesAnnotations(t *testing.T) {
	f := newFixture(t)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "ok,,Bad,x/y/z", gate.RequireAnnotation: "most"})
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, f.applied, 1, "fails closed")
	reason := f.applied[0].GetAnnotations()[suspend.Annotation]
	for _, part := range []string{`entry 2 ""`, `entry 3 "Bad"`, `entry 4 "x/y/z"`, gate.RequireAnnotation + ` is "most"`} {
		assert.Contains(t, reason, part)
	}
	assert.Equal(t, []string{"Warning InvalidGates " + reason}, f.drain())
}

// The target's own annotations leave no room for the hold's: it is held by spec.suspend alone.
func TestReconcileHoldsBySpecAloneWhenTheAnnotationsDoNotFit(t *testing.T) {
	f := newFixture(t)
	f.gate(t, "prod", false, 1, 1)
	key := f.target(t, map[string]string{gate.GatesAnnotation: "prod"})
	tooLong := apierrors.NewInvalid(schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}, "web",
		field.ErrorList{field.TooLong(field.NewPath("metadata", "annotations"), "", 262144)})
	f.failures = []error{tooLong, nil}
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, f.applied, 2)
	assert.Empty(t, f.applied[1].GetAnnotations())
	assert.Equal(t, map[string]any{"suspend": true}, f.applied[1].Object["spec"])
	events := f.drain()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning HoldReduced held by spec.suspend alone")

	// Refused twice: the error is returned and retried, and nothing claims a hold.
	f.applied = nil
	f.failures = []error{tooLong, tooLong}
	_, err = f.r.Reconcile(context.Background(), key)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.suspend alone failed too")
	events = f.drain()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning HoldFailed", "nothing claims a hold")
}

// clockFunc is a clock.PassiveClock that reads the test's time.
type clockFunc func() time.Time

func (c clockFunc) Now() time.Time                  { return c() }
func (c clockFunc) Since(t time.Time) time.Duration { return c().Sub(t) }
