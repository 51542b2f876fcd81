package reconcile

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// Object is every generated Sluice or Kubernetes kind, through a pointer: metadata and a typed
// DeepCopy.
type Object[T any] interface {
	metav1.Object
	DeepCopy() T
}

// Loaded is the object a reconcile starts from.
type Loaded[T Object[T]] struct {
	// Cached is the informer's copy, shared with every other reader: never change it.
	Cached T
	// Next is a deep copy of Cached, to change and write back.
	Next T
	// Suspend is the object's RFC-0006 suspend state.
	Suspend suspend.State
}

// Load reads the object key ("namespace/name") names through get, a lister's Get. found is false,
// with no error, when the object is gone: its deletion was the event, and there is nothing left
// to write. A malformed key is a controller.Permanent error. specSuspend returns spec.suspend;
// nil means the kind has none.
func Load[T Object[T]](key string, get func(namespace, name string) (T, error), specSuspend func(T) bool) (l Loaded[T], found bool, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return l, false, controller.Permanent(err)
	}
	cached, err := get(ns, name)
	if apierrors.IsNotFound(err) {
		return l, false, nil
	}
	if err != nil {
		return l, false, err
	}
	l.Cached, l.Next = cached, cached.DeepCopy()
	l.Suspend = suspend.Get(cached, specSuspend != nil && specSuspend(cached))
	return l, true, nil
}

// ReportSuspend writes the Suspended condition into conds (Next's), or removes it, and reports
// whether the object is suspended: then the reconcile writes status and stops, and Ready keeps
// the last state reached.
func (l Loaded[T]) ReportSuspend(conds *[]metav1.Condition) bool {
	suspend.Report(conds, l.Cached.GetGeneration(), l.Suspend)
	return l.Suspend.Suspended
}
