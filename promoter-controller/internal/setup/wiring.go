package setup

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	commitstatusinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/commitstatus/v1alpha1"
	gatinginformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/gating/v1alpha1"
	rollbackinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/rollback/v1alpha1"
	scminformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/scm/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/fluxwake"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/fluxsources"
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
	"github.com/sluicehq/sluice/promoter-controller/internal/rollbackhold"
)

// wiring is what the promoter's reconcilers share: the git cache and the repository resolver,
// the metrics, the rollback holds, the informers of the kinds other charts install, and the
// controllers once added.
//
// Those kinds (ScmRepository, ScmProvider, CommitStatus, Gate, RevertCommit) are objects a
// strategy names but does not own. They are read from every namespace the controller watches,
// whatever --watch-label-selector says, so a sharded promoter (a selector on its
// PromotionStrategies) still sees an unlabelled ScmRepository, Gate or CommitStatus. Their
// informers run under crdwatch.Kinds: each starts once its CRD is installed, and a missing CRD is
// reported on the objects that need it (CRDMissing) instead of keeping the controller from
// becoming ready. Readiness waits for the kinds whose CRDs are there at start.
type wiring struct {
	m   *manager.Manager
	cfg Config

	kinds          *crdwatch.Kinds
	repos          cache.SharedIndexInformer
	providers      cache.SharedIndexInformer
	commitStatuses cache.SharedIndexInformer
	gates          cache.SharedIndexInformer
	revertCommits  cache.SharedIndexInformer

	resolver *repository.Resolver
	metrics  *metrics.Metrics
	holds    *rollbackhold.Holds
	// merges wakes the Flux sources of the branches pull requests merge into.
	merges *fluxsources.Merges

	strategies, pullRequests *controller.Controller
	// fetches is shared by the strategy reconciler and the webhook receiver: one fetch per event.
	fetches *promotionstrategy.Fetches
}

func newWiring(m *manager.Manager, cfg Config) (*wiring, error) {
	gitCache, err := git.NewCache(cfg.CacheDir, m.Log)
	if err != nil {
		return nil, fmt.Errorf("git cache in %s: %w", cfg.CacheDir, err)
	}
	kinds, err := crdwatch.NewKinds(m.Metadata)
	if err != nil {
		return nil, err
	}
	ns := m.Options.Namespace
	byNamespace := func() cache.Indexers { return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc} }
	w := &wiring{m: m, cfg: cfg, kinds: kinds,
		repos:          scminformers.NewScmRepositoryInformer(m.Sluice, ns, 0, byNamespace()),
		providers:      scminformers.NewScmProviderInformer(m.Sluice, ns, 0, byNamespace()),
		commitStatuses: commitstatusinformers.NewCommitStatusInformer(m.Sluice, ns, 0, byNamespace()),
		gates:          gatinginformers.NewGateInformer(m.Sluice, ns, 0, byNamespace()),
		revertCommits:  rollbackinformers.NewRevertCommitInformer(m.Sluice, ns, 0, byNamespace()),
		metrics:        metrics.New(m.Metrics.Registry),
	}
	kinds.Add(crds.ScmRepositories, w.repos)
	kinds.Add(crds.ScmProviders, w.providers)
	kinds.Add(crds.CommitStatuses, w.commitStatuses)
	kinds.Add(crds.Gates, w.gates)
	kinds.Add(crds.RevertCommits, w.revertCommits)
	kinds.Log(m.Log, crds.Message)
	m.WaitFor(kinds.HasSynced)
	m.AddServer(kinds.Run)
	w.resolver = &repository.Resolver{Kube: m.Kube, Repos: w.repoLister(), Providers: w.providerLister(), Cache: gitCache}
	w.holds = rollbackhold.New(kinds, rollbacklisters.NewRevertCommitLister(w.revertCommits.GetIndexer()))
	if w.merges, err = w.fluxSources(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *wiring) repoLister() scmlisters.ScmRepositoryLister {
	return scmlisters.NewScmRepositoryLister(w.repos.GetIndexer())
}

func (w *wiring) providerLister() scmlisters.ScmProviderLister {
	return scmlisters.NewScmProviderLister(w.providers.GetIndexer())
}

// fluxSources runs the Waker of Flux's GitRepositories, whose informer starts once their CRD is
// installed.
func (w *wiring) fluxSources() (*fluxsources.Merges, error) {
	waker, err := fluxwake.New(w.m.Dynamic, w.m.Metadata, w.m.Name, w.m.Log)
	if err != nil {
		return nil, err
	}
	w.m.WaitFor(waker.HasSynced)
	w.m.AddServer(waker.Run)
	return &fluxsources.Merges{Waker: waker, Strategies: w.m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies().Lister(),
		Repositories: w.repoLister()}, nil
}
