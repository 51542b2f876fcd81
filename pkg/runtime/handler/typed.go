package handler

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// As unwraps the tombstone a delete missed by the watch arrives in, and returns obj as a T. It
// returns false for anything else.
func As[T any](obj any) (T, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// Funcs is cache.ResourceEventHandlerFuncs for objects of one type: tombstones are unwrapped and
// anything but a T is ignored, so the callbacks need no type assertions. A nil callback skips its
// events. Updates reach Update only when the resourceVersion changed: a periodic resync carries
// no news, and time-driven work requeues itself.
type Funcs[T metav1.Object] struct {
	Add    func(obj T)
	Update func(oldObj, newObj T)
	Delete func(obj T)
}

// OnAdd calls Add.
func (f Funcs[T]) OnAdd(obj any, _ bool) {
	if t, ok := As[T](obj); ok && f.Add != nil {
		f.Add(t)
	}
}

// OnUpdate calls Update when both objects are T and the resourceVersion changed.
func (f Funcs[T]) OnUpdate(oldObj, newObj any) {
	o, okOld := As[T](oldObj)
	n, okNew := As[T](newObj)
	if okOld && okNew && f.Update != nil && o.GetResourceVersion() != n.GetResourceVersion() {
		f.Update(o, n)
	}
}

// OnDelete calls Delete, with the last state known when the delete came as a tombstone.
func (f Funcs[T]) OnDelete(obj any) {
	if t, ok := As[T](obj); ok && f.Delete != nil {
		f.Delete(t)
	}
}

// SpecOrMetadataChanged reports whether an update changed what a reader of the object acts on:
// its spec (metadata.generation, for kinds with a status subresource), labels or annotations
// (suspend, a touch to force a new look). Status-only writes by the object's own controller do
// not count.
func SpecOrMetadataChanged(oldObj, newObj metav1.Object) bool {
	return oldObj.GetGeneration() != newObj.GetGeneration() ||
		!maps.Equal(oldObj.GetLabels(), newObj.GetLabels()) ||
		!maps.Equal(oldObj.GetAnnotations(), newObj.GetAnnotations())
}

// OnSpecOrMetadataChange passes every add and delete to h, and an update only when
// SpecOrMetadataChanged: the handler of a referenced kind then does not fan out to every referrer
// on each status write of the referenced object.
func OnSpecOrMetadataChange(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: h.OnAdd,
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := Object(oldObj)
			n, okNew := Object(newObj)
			if okOld && okNew && SpecOrMetadataChanged(o, n) {
				h.OnUpdate(oldObj, newObj)
			}
		},
		DeleteFunc: h.OnDelete,
	}
}

// ExceptStatusWrites passes every add and delete to h, every update that SpecOrMetadataChanged,
// and a status-only update only when wake(newObj). It is for a kind whose status only its own
// reconciler writes, and whose reconcile reads a remote system: the event of a status write
// that leaves the object waiting would bring it back to read that system again, only to decide
// the same. A status that asks for another look (a finished pull request whose spec is aligned
// next) wakes it. A reconcile that found the cache behind the API server must requeue itself
// rather than count on the event.
func ExceptStatusWrites(h cache.ResourceEventHandler, wake func(obj metav1.Object) bool) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: h.OnAdd,
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := Object(oldObj)
			n, okNew := Object(newObj)
			if okOld && okNew && !SpecOrMetadataChanged(o, n) && !wake(n) {
				return
			}
			h.OnUpdate(oldObj, newObj)
		},
		DeleteFunc: h.OnDelete,
	}
}
