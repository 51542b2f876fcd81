package store

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// EventKind is the name Events go by in change notifications.
const EventKind = "Event"

// Activity holds the Events about Sluice's kinds: the controllers' and the UI's own audit
// Events, which name the person who acted. Only those are cached; the API server keeps Events
// for an hour by default, which bounds them.
type Activity struct {
	Informer cache.SharedIndexInformer
}

// sluiceGroup is the suffix of the API groups of Sluice's kinds.
const sluiceGroup = ".sluice.dev/"

// aboutSluice reports whether an Event is about an object of one of Sluice's kinds.
func aboutSluice(e *corev1.Event) bool {
	return strings.Contains(e.InvolvedObject.APIVersion, sluiceGroup)
}

// WatchEvents adds the Events of namespace (empty: all) to the store; run its informer with
// Run. Every change is told to Changes as EventKind.
func (s *Store) WatchEvents(kube kubernetes.Interface, namespace string) (*Activity, error) {
	events := kube.CoreV1().Events(namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := events.List(ctx, o)
			if err != nil {
				return nil, err
			}
			kept := list.Items[:0]
			for i := range list.Items {
				if aboutSluice(&list.Items[i]) {
					kept = append(kept, list.Items[i])
				}
			}
			list.Items = kept
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := events.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			// Bookmarks pass: a watch that streams the initial list ends it with one.
			return watch.Filter(w, func(in watch.Event) (watch.Event, bool) {
				e, ok := in.Object.(*corev1.Event)
				return in, in.Type == watch.Bookmark || !ok || aboutSluice(e)
			}), nil
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &corev1.Event{}, 0, cache.Indexers{})
	_ = informer.SetTransform(func(obj any) (any, error) {
		if e, ok := obj.(*corev1.Event); ok {
			e.ManagedFields = nil
		}
		return obj, nil
	})
	notify := func(obj any) { s.Changes.Notify(EventKind, namespaceOf(obj)) }
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) }, DeleteFunc: notify,
	}); err != nil {
		return nil, err
	}
	s.Activity = &Activity{Informer: informer}
	return s.Activity, nil
}

// Run runs the informer until ctx ends.
func (a *Activity) Run(ctx context.Context) error {
	a.Informer.RunWithContext(ctx)
	return nil
}

// eventsResource is what a person must be allowed to list, in an Event's namespace, to see it.
var eventsResource = schema.GroupResource{Resource: "events"}

// EventList returns the Events about Sluice's kinds that the store's scope may list, in no
// order; none before WatchEvents. An audit Event names a person and an object: a reader who may
// not list the Events of its namespace must not learn either.
func (s *Store) EventList() []*corev1.Event {
	if s.Activity == nil {
		return nil
	}
	s.reads.add(KeyOf(EventKind, "", ""))
	objs := s.Activity.Informer.GetStore().List()
	out := make([]*corev1.Event, 0, len(objs))
	allowed := map[string]bool{}
	for _, o := range objs {
		e, ok := o.(*corev1.Event)
		if !ok {
			continue
		}
		may, asked := allowed[e.Namespace]
		if !asked {
			may = s.scope == nil || s.scope.MayList(eventsResource, e.Namespace)
			allowed[e.Namespace] = may
		}
		if may {
			out = append(out, e)
		}
	}
	return out
}
