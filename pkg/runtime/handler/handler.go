// Package handler turns informer events into workqueue keys: for the object itself, for the
// owner of an owned object, or for any keys a mapping function derives.
package handler

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Enqueuer receives keys; *controller.Controller satisfies it.
type Enqueuer interface {
	Enqueue(key string)
}

// Key is the workqueue key of obj: "namespace/name", or "name" for cluster-scoped objects.
func Key(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// Object unwraps the tombstone that a delete missed by the watch arrives in, and returns the object
// as metav1.Object. It returns false for anything else.
func Object(obj any) (metav1.Object, bool) { return As[metav1.Object](obj) }

// MapFunc derives the keys to enqueue for an event on obj.
type MapFunc func(obj metav1.Object) []string

// EnqueueObject enqueues the object's own key.
func EnqueueObject(q Enqueuer) cache.ResourceEventHandler {
	return EnqueueMapped(q, func(obj metav1.Object) []string { return []string{Key(obj)} })
}

// EnqueueMapped enqueues the keys fn returns. Periodic resyncs that carry an unchanged
// resourceVersion are skipped: nothing happened, and time-driven work uses RequeueAfter instead.
func EnqueueMapped(q Enqueuer, fn MapFunc) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		o, ok := Object(obj)
		if !ok {
			return
		}
		for _, key := range fn(o) {
			q.Enqueue(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			oldMeta, okOld := Object(oldObj)
			newMeta, okNew := Object(newObj)
			if okOld && okNew && oldMeta.GetResourceVersion() == newMeta.GetResourceVersion() {
				return
			}
			enqueue(newObj)
		},
		DeleteFunc: enqueue,
	}
}

// EnqueueOwner enqueues the controlling owner of obj when that owner is of the given group and kind.
// The owner is assumed to live in obj's namespace, as Kubernetes requires for namespaced owners.
func EnqueueOwner(q Enqueuer, owner schema.GroupKind) cache.ResourceEventHandler {
	return EnqueueMapped(q, func(obj metav1.Object) []string {
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.Kind != owner.Kind {
			return nil
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != owner.Group {
			return nil
		}
		if ns := obj.GetNamespace(); ns != "" {
			return []string{ns + "/" + ref.Name}
		}
		return []string{ref.Name}
	})
}
