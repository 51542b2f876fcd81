package handler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

type recorder struct{ keys []string }

func (r *recorder) Enqueue(key string) { r.keys = append(r.keys, key) }

func cm(ns, name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

func TestEnqueueObjectSkipsResyncsAndUnwrapsTombstones(t *testing.T) {
	r := &recorder{}
	h := EnqueueObject(r)
	h.OnAdd(cm("a", "x", "1"), false)
	h.OnUpdate(cm("a", "x", "1"), cm("a", "x", "1"))
	h.OnUpdate(cm("a", "x", "1"), cm("a", "x", "2"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/x", Obj: cm("a", "x", "2")})
	h.OnDelete("not an object")
	assert.Equal(t, []string{"a/x", "a/x", "a/x"}, r.keys)
}

func TestEnqueueOwnerMapsToTheControllingOwnerOfTheKind(t *testing.T) {
	r := &recorder{}
	h := EnqueueOwner(r, schema.GroupKind{Group: "promoter.sluice.dev", Kind: "PromotionStrategy"})
	yes := true
	owned := cm("apps", "child", "1")
	owned.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "not-controller"},
		{APIVersion: "promoter.sluice.dev/v1alpha1", Kind: "PromotionStrategy", Name: "web", Controller: &yes},
	}
	other := cm("apps", "other", "1")
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "PromotionStrategy", Name: "wrong-group", Controller: &yes}}
	h.OnAdd(owned, false)
	h.OnAdd(other, false)
	h.OnAdd(cm("apps", "orphan", "1"), false)
	assert.Equal(t, []string{"apps/web"}, r.keys)
}

func TestKeyOfClusterScopedObjects(t *testing.T) {
	assert.Equal(t, "node-1", Key(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}))
	assert.Equal(t, "ns/n", Key(cm("ns", "n", "")))
}
