package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	"github.com/sluicehq/sluice/pkg/suspend"
)

var gateStatus = reconcile.StatusWriter[*gatingv1alpha1.Gate, gatingv1alpha1.GateStatus]{
	Kind: "Gate", FieldManager: "test-controller",
	Status: func(g *gatingv1alpha1.Gate) *gatingv1alpha1.GateStatus { return &g.Status },
}

func gate(name string, mutate func(*gatingv1alpha1.Gate)) *gatingv1alpha1.Gate {
	g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Generation: 4, ResourceVersion: "1"}}
	if mutate != nil {
		mutate(g)
	}
	return g
}

func lister(t *testing.T, objs ...*gatingv1alpha1.Gate) func(ns, name string) (*gatingv1alpha1.Gate, error) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range objs {
		require.NoError(t, idx.Add(o))
	}
	l := gatinglisters.NewGateLister(idx)
	return func(ns, name string) (*gatingv1alpha1.Gate, error) { return l.Gates(ns).Get(name) }
}

func specSuspend(g *gatingv1alpha1.Gate) bool { return g.Spec.Suspend }

func TestLoad(t *testing.T) {
	cached := gate("prod", nil)
	get := lister(t, cached, gate("frozen", func(g *gatingv1alpha1.Gate) { g.Spec.Suspend = true }),
		gate("held", func(g *gatingv1alpha1.Gate) { g.Annotations = map[string]string{suspend.Annotation: "audit week"} }))

	l, found, err := reconcile.Load("team/prod", get, specSuspend)
	require.NoError(t, err)
	require.True(t, found)
	assert.Same(t, cached, l.Cached)
	assert.NotSame(t, l.Cached, l.Next, "Next is a copy to change")
	l.Next.Status.ObservedGeneration = 99
	assert.Zero(t, cached.Status.ObservedGeneration, "changing Next leaves the cache alone")
	assert.False(t, l.ReportSuspend(&l.Next.Status.Conditions))
	assert.Nil(t, conditions.Get(l.Next.Status.Conditions, conditions.Suspended))

	l, _, err = reconcile.Load("team/frozen", get, specSuspend)
	require.NoError(t, err)
	assert.True(t, l.ReportSuspend(&l.Next.Status.Conditions))
	s := conditions.Get(l.Next.Status.Conditions, conditions.Suspended)
	require.NotNil(t, s)
	assert.Equal(t, suspend.ReasonSpec, s.Reason)
	assert.Equal(t, int64(4), s.ObservedGeneration)

	l, _, err = reconcile.Load("team/held", get, nil)
	require.NoError(t, err)
	assert.True(t, l.ReportSuspend(&l.Next.Status.Conditions))
	assert.Equal(t, "audit week", conditions.Get(l.Next.Status.Conditions, conditions.Suspended).Message)

	_, found, err = reconcile.Load("team/gone", get, specSuspend)
	assert.NoError(t, err, "a deleted object is no error")
	assert.False(t, found)

	_, found, err = reconcile.Load("a/b/c", get, specSuspend)
	assert.True(t, controller.IsPermanent(err), "a malformed key cannot be fixed by retrying: %v", err)
	assert.False(t, found)

	failing := func(string, string) (*gatingv1alpha1.Gate, error) { return nil, errors.New("cache broken") }
	_, found, err = reconcile.Load("team/prod", failing, specSuspend)
	assert.EqualError(t, err, "cache broken")
	assert.False(t, found)
}

func statusUpdates(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestStatusWriterSkipsAnUnchangedStatus(t *testing.T) {
	before := gate("prod", nil)
	client := fake.NewSimpleClientset(before) //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
	conditions.MarkReady(&before.Status.Conditions, 4, "Open", "open")
	after := before.DeepCopy()
	// Semantic equality: the same instant in another location is the same status.
	at := &after.Status.Conditions[0].LastTransitionTime
	*at = metav1.NewTime(at.In(time.FixedZone("CET", 3600)))
	stored, wrote, err := gateStatus.Write(context.Background(), client.GatingV1alpha1().Gates("team"), before, after)
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Same(t, before, stored)
	assert.Zero(t, statusUpdates(client))
}

func TestStatusWriterWritesWithItsFieldManager(t *testing.T) {
	before := gate("prod", nil)
	client := fake.NewSimpleClientset(before) //nolint:staticcheck // see above
	var manager string
	client.PrependReactor("update", "gates", func(a k8stesting.Action) (bool, runtime.Object, error) {
		manager = a.(k8stesting.UpdateActionImpl).GetUpdateOptions().FieldManager
		return false, nil, nil
	})
	after := before.DeepCopy()
	after.Status.ObservedGeneration = 4
	stored, wrote, err := gateStatus.Write(context.Background(), client.GatingV1alpha1().Gates("team"), before, after)
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, int64(4), stored.Status.ObservedGeneration)
	assert.Equal(t, "test-controller", manager)
}

// The cache was behind: the live object has a newer spec. The status goes onto the live object.
func TestStatusWriterRetriesAConflictOnTheLiveObject(t *testing.T) {
	stale := gate("prod", nil)
	live := gate("prod", func(g *gatingv1alpha1.Gate) { g.Generation, g.Spec.Closed = 5, true })
	client := fake.NewSimpleClientset(live) //nolint:staticcheck // see above
	conflicts := 1
	client.PrependReactor("update", "gates", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"}, "prod", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	after := stale.DeepCopy()
	after.Status.ObservedGeneration = 4
	stored, wrote, err := gateStatus.Write(context.Background(), client.GatingV1alpha1().Gates("team"), stale, after)
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, 2, statusUpdates(client))
	assert.Equal(t, int64(4), stored.Status.ObservedGeneration)
	assert.True(t, stored.Spec.Closed, "the live spec is kept")
}

// The conflict came from this controller's own earlier write of the same status: nothing to do.
func TestStatusWriterStopsWhenTheLiveObjectHoldsTheStatus(t *testing.T) {
	stale := gate("prod", nil)
	live := gate("prod", func(g *gatingv1alpha1.Gate) { g.ResourceVersion, g.Status.ObservedGeneration = "2", 4 })
	client := fake.NewSimpleClientset(live) //nolint:staticcheck // see above
	client.PrependReactor("update", "gates", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "gates"}, "prod", errors.New("modified"))
	})
	after := stale.DeepCopy()
	after.Status.ObservedGeneration = 4
	stored, wrote, err := gateStatus.Write(context.Background(), client.GatingV1alpha1().Gates("team"), stale, after)
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Equal(t, "2", stored.ResourceVersion)
	assert.Equal(t, 1, statusUpdates(client))
}

func TestStatusWriterReportsOtherErrors(t *testing.T) {
	before := gate("prod", nil)
	client := fake.NewSimpleClientset(before) //nolint:staticcheck // see above
	client.PrependReactor("update", "gates", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is slow")
	})
	after := before.DeepCopy()
	after.Status.ObservedGeneration = 4
	_, wrote, err := gateStatus.Write(context.Background(), client.GatingV1alpha1().Gates("team"), before, after)
	assert.EqualError(t, err, "writing the status of Gate team/prod: etcd is slow")
	assert.False(t, wrote)
	assert.Equal(t, 1, statusUpdates(client), "no retry but for conflicts")
}

// A status decided from a stale copy must not land on a live object that moved on: the conflict
// comes back, and nothing is written over the live status.
func TestStatusWriterReturnsConflictsWhenAsked(t *testing.T) {
	stale := gate("prod", nil)
	live := gate("prod", func(g *gatingv1alpha1.Gate) { g.ResourceVersion, g.Status.ObservedGeneration = "2", 3 })
	client := fake.NewSimpleClientset(live) //nolint:staticcheck // see above
	client.PrependReactor("update", "gates", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.UpdateAction).GetObject().(*gatingv1alpha1.Gate).ResourceVersion != "2" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "gates"}, "prod", errors.New("modified"))
		}
		return false, nil, nil
	})
	writer := gateStatus
	writer.ReturnConflicts = true
	after := stale.DeepCopy()
	after.Status.ObservedGeneration = 4
	_, wrote, err := writer.Write(context.Background(), client.GatingV1alpha1().Gates("team"), stale, after)
	assert.True(t, apierrors.IsConflict(err), "the conflict is returned: %v", err)
	assert.False(t, wrote)
	assert.Equal(t, 1, statusUpdates(client), "not retried on the live object")
	got, err := client.GatingV1alpha1().Gates("team").Get(context.Background(), "prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(3), got.Status.ObservedGeneration, "the live status is left alone")

	// The live object already holds the status (this controller's own earlier write): no error.
	after.Status.ObservedGeneration = 3
	stored, wrote, err := writer.Write(context.Background(), client.GatingV1alpha1().Gates("team"), stale, after)
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Equal(t, "2", stored.ResourceVersion)
}

// Two changes written one after the other from the same copy: the second, refused as stale, is
// applied again to the live object, and the first stays.
func TestStatusWriterChangeAppliesItselfAgainToTheLiveObject(t *testing.T) {
	ctx := context.Background()
	start := gate("prod", nil)
	client := fake.NewSimpleClientset(start) //nolint:staticcheck // see above
	reconciletest.OptimisticConcurrency(client, gatingv1alpha1.SchemeGroupVersion.WithResource("gates"))
	gates := client.GatingV1alpha1().Gates("team")

	first, wrote, err := gateStatus.Change(ctx, gates, start, func(g *gatingv1alpha1.Gate) { g.Status.ObservedGeneration = 4 })
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, int64(4), first.Status.ObservedGeneration)
	assert.Zero(t, start.Status.ObservedGeneration, "the object given is not changed")

	second, wrote, err := gateStatus.Change(ctx, gates, start, func(g *gatingv1alpha1.Gate) {
		conditions.MarkReady(&g.Status.Conditions, g.Generation, "Open", "open")
	})
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, int64(4), second.Status.ObservedGeneration, "the first change is kept")
	assert.True(t, conditions.IsTrue(second.Status.Conditions, conditions.Ready))
	assert.Equal(t, 3, statusUpdates(client), "the second change conflicted once")

	_, wrote, err = gateStatus.Change(ctx, gates, second, func(g *gatingv1alpha1.Gate) { g.Status.ObservedGeneration = 4 })
	require.NoError(t, err)
	assert.False(t, wrote, "a change that changes nothing writes nothing")
	assert.Equal(t, 3, statusUpdates(client))
}
