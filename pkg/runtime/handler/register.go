package handler

import "k8s.io/client-go/tools/cache"

// EnqueueKeys enqueues each key.
func EnqueueKeys(q Enqueuer, keys []string) {
	for _, key := range keys {
		q.Enqueue(key)
	}
}

// EnqueueStore enqueues the key of every object in store (an informer's GetStore()), when
// something they all read changed: a CRD that came or went, a library they all use.
func EnqueueStore(q Enqueuer, store cache.Store) {
	EnqueueKeys(q, store.ListKeys())
}

// A Registration is one handler to add to one informer; see Register.
type Registration struct {
	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandler
}

// Watch pairs an informer with the handler to add to it.
func Watch(informer cache.SharedIndexInformer, h cache.ResourceEventHandler) Registration {
	return Registration{informer: informer, handler: h}
}

// Register adds each handler to its informer, in order, and returns the first error. A
// controller's setup lists every watch of a kind in one call, so a reader sees them together.
func Register(watches ...Registration) error {
	for _, w := range watches {
		if _, err := w.informer.AddEventHandler(w.handler); err != nil {
			return err
		}
	}
	return nil
}
