package reconciletest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
)

func TestOptimisticConcurrency(t *testing.T) {
	ctx := context.Background()
	client := fake.NewSimpleClientset(&gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "prod"}}) //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
	reconciletest.OptimisticConcurrency(client, gatingv1alpha1.SchemeGroupVersion.WithResource("gates"))
	gates := client.GatingV1alpha1().Gates("team")

	stale, err := gates.Get(ctx, "prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Zero(t, reconciletest.StatusUpdates(client))
	first := stale.DeepCopy()
	first.Status.ObservedGeneration = 1
	written, err := gates.UpdateStatus(ctx, first, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", written.ResourceVersion, "each write increments the resourceVersion")

	second := stale.DeepCopy()
	second.Status.ObservedGeneration = 2
	_, err = gates.UpdateStatus(ctx, second, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "a write from a stale copy conflicts: %v", err)

	assert.Equal(t, 2, reconciletest.StatusUpdates(client), "the refused one counts too")

	written.Spec.Closed = true
	written, err = gates.Update(ctx, written, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2", written.ResourceVersion)
	live, err := gates.Get(ctx, "prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, live.Spec.Closed)
	assert.Equal(t, int64(1), live.Status.ObservedGeneration)
	assert.Equal(t, 2, reconciletest.StatusUpdates(client), "a spec update is not a status update")
}

func TestSync(t *testing.T) {
	client := fake.NewSimpleClientset(&gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "prod", Generation: 3}}) //nolint:staticcheck // see above
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	got := reconciletest.Sync(t, store, client.GatingV1alpha1().Gates("team").Get, "prod")
	assert.Equal(t, int64(3), got.Generation)
	cached, ok, err := store.GetByKey("team/prod")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Same(t, got, cached)
}

func TestEvents(t *testing.T) {
	r := record.NewFakeRecorder(10)
	assert.Empty(t, reconciletest.Events(r))
	gate := &gatingv1alpha1.Gate{}
	r.Event(gate, "Normal", "Opened", "open")
	r.Event(gate, "Warning", "InvalidSpec", "bad")
	assert.Equal(t, []string{"Normal Opened open", "Warning InvalidSpec bad"}, reconciletest.Events(r))
	assert.Empty(t, reconciletest.Events(r), "taken")
}
