package setup

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// peerResources are the kinds of other Sluice groups that reverts read or write, each with the
// chart that owns its CRD. A cluster may lack them (those charts not installed yet, helm
// --skip-crds, CRDs managed elsewhere): then the controller keeps running and says so on every
// RevertCommit and RollbackPolicy, and starts watching them as soon as they are installed.
var peerResources = []peerResource{
	{schema.GroupResource{Group: "promoter.sluice.dev", Resource: "promotionstrategies"}, "PromotionStrategy", "promoter-controller"},
	{schema.GroupResource{Group: "promoter.sluice.dev", Resource: "pullrequests"}, "PullRequest", "promoter-controller"},
	{schema.GroupResource{Group: "commitstatus.sluice.dev", Resource: "commitstatuses"}, "CommitStatus", "commitstatus-controller"},
	{schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmrepositories"}, "ScmRepository", "commitstatus-controller"},
	{schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmproviders"}, "ScmProvider", "commitstatus-controller"},
}

type peerResource struct {
	schema.GroupResource
	kind  string
	chart string
}

// peers holds the informers of peer kinds. They are referenced objects, read whatever shard
// label the RevertCommits carry, so their factory is scoped by namespace only; it starts once
// every peer CRD is installed.
type peers struct {
	factory sluiceinformers.SharedInformerFactory
	ready   atomic.Bool
	// onReady runs once the peer caches synced, to bring back what waited for them.
	onReady []func()

	mu      sync.Mutex
	present map[schema.GroupResource]bool
	wake    chan struct{}
}

func newPeers(m *manager.Manager) *peers {
	return &peers{
		factory: sluiceinformers.NewSharedInformerFactoryWithOptions(m.Sluice, 0, sluiceinformers.WithNamespace(m.Options.Namespace)),
		present: map[schema.GroupResource]bool{},
		wake:    make(chan struct{}, 1),
	}
}

// Status reports whether every peer CRD is installed and its cache synced; when not, missing
// says which CRDs are not installed and the chart that installs each, for a Stalled message.
func (p *peers) Status() (ready bool, missing string) {
	if p.ready.Load() {
		return true, ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return false, describeMissing(p.present)
}

// describeMissing names the peer CRDs not in present, grouped by the chart that owns them.
func describeMissing(present map[schema.GroupResource]bool) string {
	var charts []string
	kinds := map[string][]string{}
	for _, r := range peerResources {
		if present[r.GroupResource] {
			continue
		}
		if kinds[r.chart] == nil {
			charts = append(charts, r.chart)
		}
		kinds[r.chart] = append(kinds[r.chart], r.kind)
	}
	if len(charts) == 0 {
		return "their CRDs are installed, and the controller is loading them; it carries on in a moment"
	}
	parts := make([]string, len(charts))
	for i, chart := range charts {
		parts[i] = fmt.Sprintf("the %s CRDs are not installed: install the %s chart", strings.Join(kinds[chart], ", "), chart)
	}
	return strings.Join(parts, "; ") + " (with replicaCount: 0 for its CRDs alone), or the sluice chart, which installs every chart;" +
		" the controller carries on as soon as they are installed, without a restart"
}

func (p *peers) crdChanged(e crdwatch.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.present[e.Resource] = !e.Deleted
	for _, r := range peerResources {
		if !p.present[r.GroupResource] {
			p.ready.Store(false)
			return
		}
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// start is added to the manager: it watches CRDs, and starts the peer informers once all are
// there. An informer of a CRD installed a moment ago may fail its first lists; it retries on its
// own until the resource is served.
func (p *peers) start(m *manager.Manager) error {
	watch, err := crdwatch.Watch(m.Metadata, p.crdChanged)
	if err != nil {
		return err
	}
	m.AddRunnable(func(ctx context.Context) error {
		go func() { _ = watch(ctx) }()
		started := false
		for {
			select {
			case <-ctx.Done():
				p.factory.Shutdown()
				return nil
			case <-p.wake:
			}
			if !started {
				p.factory.Start(ctx.Done())
				started = true
			}
			for _, ok := range p.factory.WaitForCacheSync(ctx.Done()) {
				if !ok {
					p.factory.Shutdown()
					return nil
				}
			}
			if !p.ready.Swap(true) {
				m.Log.Info("peer CRDs installed and watched", "kinds", len(peerResources))
				for _, f := range p.onReady {
					f()
				}
			}
		}
	})
	return nil
}

// enqueueAll returns an onReady hook that enqueues every object of an informer.
func enqueueAll(inf cache.SharedIndexInformer, enqueue func(string)) func() {
	return func() {
		for _, key := range inf.GetStore().ListKeys() {
			enqueue(key)
		}
	}
}
