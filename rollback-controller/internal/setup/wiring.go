package setup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/fluxwake"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/rollback-controller/internal/fluxsources"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// peerKinds are the kinds of other Sluice charts that reverts and policies read or write. A
// cluster may lack them (those charts not installed yet, helm --skip-crds, CRDs managed
// elsewhere): then the controller keeps running and says so on every RevertCommit and
// RollbackPolicy, and starts watching each as soon as it is installed.
var peerKinds = []schema.GroupResource{
	crds.PromotionStrategies, crds.PullRequests, crds.CommitStatuses, crds.ScmRepositories, crds.ScmProviders,
}

// loadingPeers is the Stalled message while every peer CRD is installed but not yet read.
const loadingPeers = "their CRDs are installed, and the controller is loading them; it carries on in a moment"

// wiring is what the rollback-controller's reconcilers share: the metrics, and the informers of
// peer kinds. They
// are referenced objects, read whatever shard label the RevertCommits carry, so their factory is
// scoped by namespace only. Each informer runs under crdwatch.Kinds, from when its CRD is
// installed; the factory itself is never started.
type wiring struct {
	m   *manager.Manager
	cfg Config

	peers   sluiceinformers.SharedInformerFactory
	kinds   *crdwatch.Kinds
	metrics *metrics.Rollbacks
	// fluxSources wakes the Flux sources of the branches reverts merge into.
	fluxSources *fluxsources.Reverts
}

func newWiring(m *manager.Manager, cfg Config) (*wiring, error) {
	kinds, err := crdwatch.NewKinds(m.Metadata)
	if err != nil {
		return nil, err
	}
	w := &wiring{
		m: m, cfg: cfg,
		peers:   sluiceinformers.NewSharedInformerFactoryWithOptions(m.Sluice, 0, sluiceinformers.WithNamespace(m.Options.Namespace)),
		kinds:   kinds,
		metrics: metrics.New(m.Metrics),
	}
	waker, err := fluxwake.New(m.Dynamic, m.Metadata, m.Name, m.Log)
	if err != nil {
		return nil, err
	}
	m.WaitFor(waker.HasSynced)
	m.AddServer(waker.Run)
	w.fluxSources = &fluxsources.Reverts{Waker: waker,
		Strategies: w.peers.Promoter().V1alpha1().PromotionStrategies().Lister(), Repositories: w.peers.Scm().V1alpha1().ScmRepositories().Lister()}
	return w, nil
}

// peerCRDs reports whether every peer CRD is installed and its cache synced; when not, missing
// says which CRDs are not installed and the chart that installs each, for a Stalled message.
func (w *wiring) peerCRDs() (ready bool, missing string) {
	missing, ready = crds.Check(w.kinds, peerKinds...)
	if !ready && missing == "" {
		missing = loadingPeers
	}
	return ready, missing
}

// startPeers runs each peer informer the reconcilers took from the factory once its CRD is
// installed, on every replica so a standby is warm; /readyz waits for those installed at start.
// It comes after every adder, whose OnChange hooks bring back what waited when a peer CRD comes
// (its cache synced) or goes.
func (w *wiring) startPeers() error {
	for _, gr := range peerKinds {
		crd, _ := crds.Of(gr)
		informer, err := w.peers.ForResource(crd.GroupVersionResource())
		if err != nil {
			return fmt.Errorf("peer kind %s: %w", crd.Kind, err)
		}
		w.kinds.Add(gr, informer.Informer())
	}
	w.kinds.Log(w.m.Log, crds.Message)
	w.m.WaitFor(w.kinds.HasSynced)
	w.m.AddServer(w.kinds.Run)
	return nil
}
