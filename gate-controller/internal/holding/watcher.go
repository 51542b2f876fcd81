package holding

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/gate-controller/internal/metrics"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
)

// Watcher keeps the registry in step with what the API server serves: it watches every
// configured kind that is served, and starts watching a missing one when its CRD is installed.
type Watcher struct {
	Targets   []kinds.Target
	Discovery discovery.DiscoveryInterface
	// Factory makes the metadata-only caches; it carries the controller's namespace and label scope.
	Factory metadatainformer.SharedInformerFactory
	// Metadata lists CRDs, which are cluster-scoped and never filtered by label.
	Metadata metadata.Interface
	Registry *Registry
	// OnWatch adds event handlers to a newly watched kind before its cache starts.
	OnWatch func(*Watched) error
	Metrics *metrics.Gates
	Log     *slog.Logger

	// missing are the targets the last sync did not find, so each is logged once.
	missing map[string]bool
}

// Sync watches every configured kind that is served now and is not watched yet, and logs the
// ones still missing. Caches of kinds added before the manager runs start with the manager's;
// Run starts the ones added later.
func (w *Watcher) Sync() error {
	res, err := kinds.Resolve(w.Discovery, w.Targets)
	if err != nil {
		return err
	}
	for _, k := range res.Kinds {
		if w.Registry.Has(k.GroupResource()) {
			continue
		}
		informer := w.Factory.ForResource(k.GVR).Informer()
		if err := informer.SetTransform(hold.TrimManagedFields); err != nil {
			return err
		}
		if err := informer.AddIndexers(Indexers); err != nil {
			return err
		}
		watched := &Watched{Kind: k, Informer: informer}
		if err := w.OnWatch(watched); err != nil {
			return err
		}
		w.Registry.Add(watched)
		w.Metrics.Kinds.WithLabelValues(k.GroupResource().String(), "watched").Set(1)
		w.Log.Info("holding objects of this kind", "resource", k.GroupResource().String(), "version", k.GVR.Version, "kind", k.Kind, "mode", k.Mode)
	}
	w.Metrics.Kinds.DeletePartialMatch(prometheus.Labels{"state": "missing"})
	missing := map[string]bool{}
	for _, t := range res.Missing {
		missing[t.String()] = true
		w.Metrics.Kinds.WithLabelValues(t.String(), "missing").Set(1)
		if !w.missing[t.String()] {
			w.Log.Info("kind not served (is its CRD installed?); skipped until it is", "target", t.String())
		}
	}
	w.missing = missing
	return nil
}

// Run watches CRDs and syncs when one for a configured kind that is not watched yet appears or
// changes, then starts the caches of newly watched kinds. A new CRD is served a moment after it
// is established, so a sync that does not find it yet is retried with backoff.
func (w *Watcher) Run(ctx context.Context) error {
	var mu sync.Mutex
	waiting := map[schema.GroupResource]bool{}
	changed := make(chan struct{}, 1)
	notify := func(e crdwatch.Event) {
		if e.Deleted || !w.wants(e.Resource) || w.Registry.Has(e.Resource) {
			return
		}
		mu.Lock()
		waiting[e.Resource] = true
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	watchCRDs, err := crdwatch.Watch(w.Metadata, notify)
	if err != nil {
		return err
	}
	go func() { _ = watchCRDs(ctx) }()

	retry := time.NewTimer(0)
	<-retry.C
	backoff := minRetry
	for {
		select {
		case <-ctx.Done():
			retry.Stop()
			return nil
		case <-changed:
			// A CRD just appeared or changed: it will be served within moments, so look again
			// quickly rather than after a backoff grown while installing earlier CRDs.
			backoff = minRetry
		case <-retry.C:
		}
		if err := w.Sync(); err != nil {
			w.Log.Info("cannot discover newly installed kinds; retrying", "error", err)
		} else {
			w.Factory.Start(ctx.Done())
		}
		mu.Lock()
		for gr := range waiting {
			if w.Registry.Has(gr) {
				delete(waiting, gr)
			}
		}
		pending := len(waiting)
		mu.Unlock()
		if pending == 0 {
			backoff = minRetry
			continue
		}
		retry.Reset(backoff)
		backoff = min(2*backoff, maxRetry)
	}
}

// Discovery lags a CRD's establishment by a moment; a CRD never served is retried every maxRetry.
// The cap bounds how late a kind installed alongside others is picked up.
const (
	minRetry = 250 * time.Millisecond
	maxRetry = 10 * time.Second
)

// wants reports whether a configured target covers gr.
func (w *Watcher) wants(gr schema.GroupResource) bool {
	for _, t := range w.Targets {
		if t.Group == gr.Group && (t.Resource == kinds.AllResources || t.Resource == gr.Resource) {
			return true
		}
	}
	return false
}
