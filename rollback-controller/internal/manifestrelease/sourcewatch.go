package manifestrelease

import (
	"context"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// SourceWatches wakes a release whose source ConfigMap does not exist yet as soon as it is
// created, rather than on the release's next backoff retry.
//
// The controller holds no right to ConfigMaps of its own (a tenant's ConfigMaps may hold what
// only the tenant should read), so there is no cluster-wide ConfigMap informer. Instead each
// waiting release watches the one ConfigMap it waits for, by name, as the identity it acts as:
// its ServiceAccount must be allowed list and watch on ConfigMaps of its namespace, as the chart
// README's tenant Role allows. Without those rights the watch ends and the release is looked at
// again on its backoff, as before.
type SourceWatches struct {
	// Enqueue brings a release back to the reconciler, by "namespace/name".
	Enqueue func(key string)
	Log     *slog.Logger

	mu       sync.Mutex
	ctx      context.Context
	watching map[string]*sourceWatch
}

// sourceWatch is the watch of one release: what it waits for, and how to end it.
type sourceWatch struct {
	target string
	cancel context.CancelFunc
}

// Run gives the watches their lifetime: they start only while it runs, and all end with ctx.
func (w *SourceWatches) Run(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, sw := range w.watching {
		sw.cancel()
		delete(w.watching, key)
	}
	return nil
}

// Await watches, with client, for ConfigMap name of namespace; once it exists, key is enqueued
// and the watch ends. actor names whose rights client carries: a release that now acts as
// another identity, or waits for another ConfigMap, gets a new watch; the same one keeps its own.
func (w *SourceWatches) Await(key string, client corev1client.ConfigMapsGetter, actor, namespace, name string) {
	if w == nil {
		return
	}
	target := actor + " " + namespace + "/" + name
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil || w.ctx.Err() != nil {
		return
	}
	if sw, ok := w.watching[key]; ok {
		if sw.target == target {
			return
		}
		sw.cancel()
	}
	ctx, cancel := context.WithCancel(w.ctx)
	sw := &sourceWatch{target: target, cancel: cancel}
	if w.watching == nil {
		w.watching = map[string]*sourceWatch{}
	}
	w.watching[key] = sw
	go w.watch(ctx, key, sw, client.ConfigMaps(namespace), name)
}

// Forget ends the watch of key, if any: its source was found, changed, or it was deleted.
func (w *SourceWatches) Forget(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if sw, ok := w.watching[key]; ok {
		sw.cancel()
		delete(w.watching, key)
	}
}

// Waiting reports whether key has a watch running.
func (w *SourceWatches) Waiting(key string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.watching[key]
	return ok
}

// done removes sw, unless a newer watch of key replaced it.
func (w *SourceWatches) done(key string, sw *sourceWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching[key] == sw {
		delete(w.watching, key)
	}
	sw.cancel()
}

// Delays between attempts of a watch the API server ended with an error other than forbidden.
const (
	minWatchRetry = time.Second
	maxWatchRetry = time.Minute
)

// watch lists the one ConfigMap, then watches from that list, until it appears. A list first, so
// a ConfigMap created between the reconcile's read and this watch is not missed.
func (w *SourceWatches) watch(ctx context.Context, key string, sw *sourceWatch, cms corev1client.ConfigMapInterface, name string) {
	defer w.done(key, sw)
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	retry := minWatchRetry
	for ctx.Err() == nil {
		found, err := appeared(ctx, cms, opts)
		switch {
		case found:
			w.Enqueue(key)
			return
		case apierrors.IsForbidden(err):
			w.log().Info("not watching the source ConfigMap: its creation is seen on the release's next retry", "release", key, "configMap", name, "error", err)
			return
		case err != nil && ctx.Err() == nil:
			w.log().Debug("watching the source ConfigMap failed; trying again", "release", key, "configMap", name, "error", err, "retry", retry)
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
			retry = min(2*retry, maxWatchRetry)
		default:
			retry = minWatchRetry
		}
	}
}

// appeared lists the ConfigMap and, when it does not exist, watches until it does or the API
// server ends the watch (found false, err nil: list again).
func appeared(ctx context.Context, cms corev1client.ConfigMapInterface, opts metav1.ListOptions) (bool, error) {
	list, err := cms.List(ctx, opts)
	if err != nil {
		return false, err
	}
	if len(list.Items) > 0 {
		return true, nil
	}
	opts.ResourceVersion = list.ResourceVersion
	watcher, err := cms.Watch(ctx, opts)
	if err != nil {
		return false, err
	}
	defer watcher.Stop()
	for ev := range watcher.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			return true, nil
		case watch.Error:
			return false, apierrors.FromObject(ev.Object)
		}
	}
	return false, nil
}

func (w *SourceWatches) log() *slog.Logger {
	if w.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Log
}
