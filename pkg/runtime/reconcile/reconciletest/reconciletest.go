// Package reconciletest helps unit tests of reconcilers that run on client-go fake clientsets.
package reconciletest

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// Fake is what every generated fake clientset has: reactors and the object tracker.
type Fake interface {
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
	Tracker() k8stesting.ObjectTracker
}

// OptimisticConcurrency makes updates of gvr through c (status included) behave as the API
// server's do, which the fake tracker does not: an update must carry the stored object's
// resourceVersion or fails with a conflict, and each write increments it. A reconcile that starts
// from a stale cached copy then meets the conflict it would meet in a cluster. Objects created
// with no resourceVersion count as "0".
func OptimisticConcurrency(c Fake, gvr schema.GroupVersionResource) {
	c.PrependReactor("update", gvr.Resource, func(action k8stesting.Action) (bool, runtime.Object, error) {
		update, ok := action.(k8stesting.UpdateAction)
		if !ok {
			return false, nil, nil
		}
		obj := update.GetObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		stored, err := c.Tracker().Get(gvr, m.GetNamespace(), m.GetName())
		if err != nil {
			return true, nil, err
		}
		s, err := meta.Accessor(stored)
		if err != nil {
			return true, nil, err
		}
		if have, sent := version(s.GetResourceVersion()), version(m.GetResourceVersion()); have != sent {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
				fmt.Errorf("the object has been modified: resourceVersion %d, not %d", have, sent))
		}
		next := obj.DeepCopyObject()
		n, _ := meta.Accessor(next)
		n.SetResourceVersion(strconv.Itoa(version(m.GetResourceVersion()) + 1))
		return true, next, c.Tracker().Update(gvr, next, m.GetNamespace())
	})
}

func version(rv string) int {
	n, _ := strconv.Atoi(rv)
	return n
}

// StatusUpdates counts the status updates c has received, of any resource: how a test sees that
// a reconcile wrote, or did not write, its status.
func StatusUpdates(c interface{ Actions() []k8stesting.Action }) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// Events takes the Events r holds now, in the order recorded, without waiting for more.
func Events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Sync reads the object name through get (a typed client's Get for one namespace) and puts it in
// store, as an informer would once the watch delivers it; it returns the object.
func Sync[T any](t testing.TB, store cache.Store, get func(context.Context, string, metav1.GetOptions) (T, error), name string) T {
	t.Helper()
	obj, err := get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if err := store.Update(obj); err != nil {
		t.Fatalf("cache %s: %v", name, err)
	}
	return obj
}
