package handler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestFuncsUnwrapTombstonesAndIgnoreOtherTypes(t *testing.T) {
	var got []string
	h := Funcs[*corev1.ConfigMap]{
		Add:    func(c *corev1.ConfigMap) { got = append(got, "add "+c.Name) },
		Update: func(o, n *corev1.ConfigMap) { got = append(got, "update "+o.ResourceVersion+"->"+n.ResourceVersion) },
		Delete: func(c *corev1.ConfigMap) { got = append(got, "delete "+c.Name) },
	}
	h.OnAdd(cm("a", "x", "1"), false)
	h.OnAdd(&corev1.Secret{}, false)
	h.OnUpdate(cm("a", "x", "1"), cm("a", "x", "1")) // a resync
	h.OnUpdate(cm("a", "x", "1"), cm("a", "x", "2"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/x", Obj: cm("a", "x", "2")})
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/s", Obj: &corev1.Secret{}})
	h.OnDelete("not an object")
	assert.Equal(t, []string{"add x", "update 1->2", "delete x"}, got)

	// Nil callbacks skip their events.
	Funcs[*corev1.ConfigMap]{}.OnAdd(cm("a", "x", "1"), false)
}

func TestOnSpecOrMetadataChangeSkipsStatusOnlyUpdates(t *testing.T) {
	r := &recorder{}
	h := OnSpecOrMetadataChange(EnqueueObject(r))
	obj := func(rv string, generation int64, labels, annotations map[string]string) *corev1.ConfigMap {
		c := cm("a", "x", rv)
		c.Generation, c.Labels, c.Annotations = generation, labels, annotations
		return c
	}
	h.OnAdd(obj("1", 1, nil, nil), false)
	h.OnUpdate(obj("1", 1, nil, nil), obj("2", 1, nil, nil)) // status only
	h.OnUpdate(obj("2", 1, nil, nil), obj("3", 2, nil, nil))
	h.OnUpdate(obj("3", 2, nil, nil), obj("4", 2, map[string]string{"shard": "a"}, nil))
	h.OnUpdate(obj("4", 2, nil, nil), obj("5", 2, nil, map[string]string{"touch": "now"}))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/x", Obj: obj("5", 2, nil, nil)})
	assert.Equal(t, []string{"a/x", "a/x", "a/x", "a/x", "a/x"}, r.keys)
}

func TestSpecOrMetadataChanged(t *testing.T) {
	base := metav1.ObjectMeta{Generation: 1, Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"}}
	same := base
	same.ResourceVersion = "9"
	assert.False(t, SpecOrMetadataChanged(&base, &same))
	gen := base
	gen.Generation = 2
	assert.True(t, SpecOrMetadataChanged(&base, &gen))
	ann := base
	ann.Annotations = nil
	assert.True(t, SpecOrMetadataChanged(&base, &ann))
}

func TestExceptStatusWritesWakesOnlyWhenTheStatusAsks(t *testing.T) {
	r := &recorder{}
	// A ConfigMap's data stands in for a status: not spec, labels or annotations.
	h := ExceptStatusWrites(EnqueueObject(r), func(obj metav1.Object) bool { return obj.(*corev1.ConfigMap).Data["status"] == "finished" })
	withStatus := func(rv, status string, generation int64) *corev1.ConfigMap {
		c := cm("a", "x", rv)
		c.Generation, c.Data = generation, map[string]string{"status": status}
		return c
	}
	h.OnAdd(withStatus("1", "waiting", 1), false)
	h.OnUpdate(withStatus("1", "waiting", 1), withStatus("2", "waiting", 1))
	assert.Equal(t, []string{"a/x"}, r.keys, "a write that leaves it waiting is not an event")
	h.OnUpdate(withStatus("2", "waiting", 1), withStatus("3", "finished", 1))
	assert.Equal(t, []string{"a/x", "a/x"}, r.keys, "a status that asks for a look is")
	h.OnUpdate(withStatus("3", "waiting", 1), withStatus("4", "waiting", 2))
	assert.Equal(t, []string{"a/x", "a/x", "a/x"}, r.keys, "a spec change is")
	h.OnDelete(withStatus("4", "waiting", 2))
	assert.Len(t, r.keys, 4)
}
