package handler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestEnqueueStoreEnqueuesEveryObject(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	require.NoError(t, store.Add(cm("a", "x", "1")))
	require.NoError(t, store.Add(cm("b", "y", "1")))
	r := &recorder{}
	EnqueueStore(r, store)
	assert.ElementsMatch(t, []string{"a/x", "b/y"}, r.keys)
}

func TestRegisterAddsEachHandlerToItsInformer(t *testing.T) {
	first := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	second := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	r1, r2 := &recorder{}, &recorder{}
	require.NoError(t, Register(Watch(first, EnqueueObject(r1)), Watch(second, EnqueueObject(r2))))
	assert.False(t, first.IsStopped())
	// A stopped informer refuses handlers: Register says so instead of dropping the watch.
	stopped := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	stop := make(chan struct{})
	close(stop)
	stopped.Run(stop)
	assert.Error(t, Register(Watch(stopped, EnqueueObject(r1))))
}
