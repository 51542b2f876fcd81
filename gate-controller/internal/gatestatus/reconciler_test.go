package gatestatus

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	"github.com/sluicehq/sluice/gate-controller/internal/metrics"
	"github.com/sluicehq/sluice/pkg/conditions"
	gatelogic "github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
)

type harness struct {
	r        *Reconciler
	client   *fake.Clientset
	informer sluiceinformers.SharedInformerFactory
	events   *record.FakeRecorder
	metrics  *metrics.Gates
	now      time.Time
	told     []time.Time
}

func newHarness(t *testing.T, g *gatingv1alpha1.Gate) *harness {
	// NewClientset needs generated OpenAPI models, which Sluice does not generate; status updates
	// are plain updates, so the simple tracker serves them the same.
	h := &harness{client: fake.NewSimpleClientset(g), events: record.NewFakeRecorder(20), now: friday}
	h.informer = sluiceinformers.NewSharedInformerFactory(h.client, 0)
	h.metrics = metrics.New(prometheus.NewRegistry())
	lister := h.informer.Gating().V1alpha1().Gates()
	require.NoError(t, lister.Informer().GetIndexer().Add(g))
	h.r = &Reconciler{
		Gates: lister.Lister(), Client: h.client, Recorder: h.events, Metrics: h.metrics,
		Held:         func(gatelogic.Ref, int) ([]gatingv1alpha1.HeldObject, int) { return nil, 0 },
		Transitioned: func(_ gatelogic.Ref, at time.Time) { h.told = append(h.told, at) },
		Clock:        clockFunc(func() time.Time { return h.now }),
	}
	return h
}

// sync feeds the status the fake API server holds back into the lister, as the informer would.
func (h *harness) sync(t *testing.T) *gatingv1alpha1.Gate {
	g, err := h.client.GatingV1alpha1().Gates("apps").Get(context.Background(), "prod", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, h.informer.Gating().V1alpha1().Gates().Informer().GetIndexer().Update(g))
	return g
}

func (h *harness) drain() []string { return reconciletest.Events(h.events) }

// The clock is injected: a window edge reached without any edit changes the state at the
// instant the reconciler asked to be woken.
func TestReconcileWakesAtTheWindowEdgeAndReportsTheTransition(t *testing.T) {
	h := newHarness(t, newGate(gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{noDeployFriday()}}))
	res, err := h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	assert.Equal(t, time.Hour, res.RequeueAfter)
	g := h.sync(t)
	assert.True(t, g.Status.Open)
	assert.Equal(t, []string{"Normal Opened open (Default): not closed by hand, and no override or closed window applies; closes at 2025-06-13T18:00:00+01:00"}, h.drain())
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.Open.WithLabelValues("apps", "prod")))

	// Reconciling again at the same instant writes nothing and says nothing.
	writes := len(h.client.Actions())
	_, err = h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	assert.Len(t, h.client.Actions(), writes)
	assert.Empty(t, h.drain())

	h.now = h.now.Add(res.RequeueAfter)
	res, err = h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	assert.Equal(t, 62*time.Hour, res.RequeueAfter)
	g = h.sync(t)
	assert.False(t, g.Status.Open)
	events := h.drain()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], `Normal Closed closed (Window): closed by window "No Deploy Friday"`)
	assert.Equal(t, []time.Time{friday, friday.Add(time.Hour)}, h.told)
	assert.Equal(t, 0.0, testutil.ToFloat64(h.metrics.Open.WithLabelValues("apps", "prod")))
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.Transitions.WithLabelValues("apps", "prod", "closed")))
}

func TestReconcileForgetsADeletedGate(t *testing.T) {
	h := newHarness(t, newGate(gatingv1alpha1.GateSpec{}))
	_, err := h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	require.NoError(t, h.informer.Gating().V1alpha1().Gates().Informer().GetIndexer().Delete(h.sync(t)))
	_, err = h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	assert.Zero(t, testutil.CollectAndCount(h.metrics.Open))
	_, err = h.r.Reconcile(context.Background(), "not/a/key")
	assert.Error(t, err)
}

// While a gate takes hold of many objects, its held list is written at most once per
// HeldListInterval; a change of state is written at once.
func TestReconcileSpacesOutHeldListWrites(t *testing.T) {
	h := newHarness(t, newGate(gatingv1alpha1.GateSpec{Closed: true}))
	var held []gatingv1alpha1.HeldObject
	listed := 0
	h.r.Held = func(gatelogic.Ref, int) ([]gatingv1alpha1.HeldObject, int) { listed++; return held, len(held) }
	_, err := h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	h.sync(t)

	held = append(held, gatingv1alpha1.HeldObject{Kind: "Kustomization", Namespace: "apps", Name: "a"})
	h.now = h.now.Add(300 * time.Millisecond)
	listed = 0
	res, err := h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	assert.Equal(t, HeldListInterval-300*time.Millisecond, res.RequeueAfter)
	assert.Equal(t, int32(0), h.sync(t).Status.Holding, "not written yet")
	assert.Zero(t, listed, "the held objects are not listed while their list would wait anyway")

	h.now = h.now.Add(res.RequeueAfter)
	_, err = h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	assert.Equal(t, int32(1), h.sync(t).Status.Holding)
	assert.Equal(t, 1.0, testutil.ToFloat64(h.metrics.Held.WithLabelValues("apps", "prod")), "the metric follows within the interval")

	// Opening the gate is written at once, held list and all.
	updated := h.sync(t).DeepCopy()
	updated.Spec.Closed = false
	updated.Generation++
	require.NoError(t, h.informer.Gating().V1alpha1().Gates().Informer().GetIndexer().Update(updated))
	held = nil
	h.now = h.now.Add(time.Millisecond)
	_, err = h.r.Reconcile(context.Background(), "apps/prod")
	require.NoError(t, err)
	g, err := h.client.GatingV1alpha1().Gates("apps").Get(context.Background(), "prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, g.Status.Open)
	assert.Zero(t, g.Status.Holding)
}

// clockFunc is a clock.PassiveClock that reads the test's time.
type clockFunc func() time.Time

func (c clockFunc) Now() time.Time                  { return c() }
func (c clockFunc) Since(t time.Time) time.Duration { return c().Sub(t) }

// The objects a closing gate holds are reported in one Event on the gate, with their count,
// once the count has stopped changing; not one Event per object.
func TestReconcileReportsTheHeldCountOnceItSettles(t *testing.T) {
	h := newHarness(t, newGate(gatingv1alpha1.GateSpec{Closed: true}))
	var held []gatingv1alpha1.HeldObject
	h.r.Held = func(gatelogic.Ref, int) ([]gatingv1alpha1.HeldObject, int) { return held, len(held) }
	reconcile := func(after time.Duration) time.Duration {
		h.now = h.now.Add(after)
		res, err := h.r.Reconcile(context.Background(), "apps/prod")
		require.NoError(t, err)
		h.sync(t)
		return res.RequeueAfter
	}
	reconcile(0)
	require.Len(t, h.drain(), 1, "the Closed Event")

	for _, name := range []string{"a", "b", "c", "d", "e"} {
		held = append(held, gatingv1alpha1.HeldObject{Kind: "Kustomization", Namespace: "apps", Name: name})
		reconcile(400 * time.Millisecond)
	}
	assert.Empty(t, h.drain(), "nothing while objects are still being held")
	for wait := reconcile(0); wait > 0; wait = reconcile(wait) {
	}
	assert.Equal(t, []string{"Normal Holding holds 5 objects, 5 more than at the last report: Kustomization apps/a, Kustomization apps/b, Kustomization apps/c and 2 more"}, h.drain())
	reconcile(time.Hour)
	assert.Empty(t, h.drain(), "reported once")

	held = held[:1]
	for wait := reconcile(time.Millisecond); wait > 0; wait = reconcile(wait) {
	}
	assert.Equal(t, []string{"Normal Released holds 1 object, 4 released since the last report: Kustomization apps/a"}, h.drain())
}

// A status the API server rejects (as it rejected the zero override expiry before the CRD
// refused it at admission) is never dropped in silence: the gate reports it closed and Stalled,
// with the API server's words, a Warning Event says so, and the error is not retried in a loop.
func TestRejectedStatusIsReportedNotDropped(t *testing.T) {
	expired := metav1.NewTime(friday.Add(-time.Hour))
	h := newHarness(t, newGate(gatingv1alpha1.GateSpec{Override: &gatingv1alpha1.GateOverride{State: gatingv1alpha1.StateOpen, Until: expired}}))
	h.client.PrependReactor("update", "gates", func(action k8stesting.Action) (bool, runtime.Object, error) {
		g := action.(k8stesting.UpdateAction).GetObject().(*gatingv1alpha1.Gate)
		if action.GetSubresource() == "status" && g.Status.ExpiredOverride != nil {
			return true, nil, apierrors.NewInvalid(gatingv1alpha1.SchemeGroupVersion.WithKind("Gate").GroupKind(), g.Name,
				field.ErrorList{field.Required(field.NewPath("status", "expiredOverride", "until"), "")})
		}
		return false, nil, nil
	})
	_, err := h.r.Reconcile(context.Background(), "apps/prod")
	require.Error(t, err)
	assert.True(t, controller.IsPermanent(err), "a rejected status is not retried in a hot loop: %v", err)

	g := h.sync(t)
	assert.False(t, g.Status.Open)
	assert.Equal(t, g.Generation, g.Status.ObservedGeneration)
	assert.Equal(t, gatingv1alpha1.ReasonInvalid, g.Status.Reason)
	assert.Contains(t, g.Status.Message, "status.expiredOverride.until")
	assert.True(t, conditions.IsTrue(g.Status.Conditions, conditions.Stalled))
	events := h.drain()
	require.NotEmpty(t, events)
	assert.Contains(t, events[0], "Warning StatusRejected")
}
