package setup

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	commitstatusinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/commitstatus/v1alpha1"
	gatinginformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/gating/v1alpha1"
	rollbackinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/rollback/v1alpha1"
	scminformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/scm/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/crds"
)

// references are the objects a strategy names but does not own, of kinds other charts install.
// They are read from every namespace the controller watches, whatever --watch-label-selector
// says, so a sharded promoter (a selector on its PromotionStrategies) still sees an unlabelled
// ScmRepository, Gate or CommitStatus. Their informers run under crdwatch.Kinds: each starts once
// its CRD is installed, and a missing CRD is reported on the objects that need it (CRDMissing)
// instead of keeping the controller from becoming ready. Readiness waits for the kinds whose CRDs
// are there at start.
type references struct {
	kinds          *crdwatch.Kinds
	repos          cache.SharedIndexInformer
	providers      cache.SharedIndexInformer
	commitStatuses cache.SharedIndexInformer
	gates          cache.SharedIndexInformer
	revertCommits  cache.SharedIndexInformer
}

func newReferences(m *manager.Manager) (*references, error) {
	kinds, err := crdwatch.NewKinds(m.Metadata)
	if err != nil {
		return nil, err
	}
	ns := m.Options.Namespace
	byNamespace := func() cache.Indexers { return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc} }
	r := &references{kinds: kinds,
		repos:          scminformers.NewScmRepositoryInformer(m.Sluice, ns, 0, byNamespace()),
		providers:      scminformers.NewScmProviderInformer(m.Sluice, ns, 0, byNamespace()),
		commitStatuses: commitstatusinformers.NewCommitStatusInformer(m.Sluice, ns, 0, byNamespace()),
		gates:          gatinginformers.NewGateInformer(m.Sluice, ns, 0, byNamespace()),
		revertCommits:  rollbackinformers.NewRevertCommitInformer(m.Sluice, ns, 0, byNamespace()),
	}
	kinds.Add(crds.ScmRepositories, r.repos)
	kinds.Add(crds.ScmProviders, r.providers)
	kinds.Add(crds.CommitStatuses, r.commitStatuses)
	kinds.Add(crds.Gates, r.gates)
	kinds.Add(crds.RevertCommits, r.revertCommits)
	kinds.Log(m.Log, crds.Message)
	m.WaitFor(kinds.HasSynced)
	m.AddServer(kinds.Run)
	return r, nil
}

func (r *references) repoLister() scmlisters.ScmRepositoryLister {
	return scmlisters.NewScmRepositoryLister(r.repos.GetIndexer())
}

func (r *references) providerLister() scmlisters.ScmProviderLister {
	return scmlisters.NewScmProviderLister(r.providers.GetIndexer())
}

// watches maps every event to the strategies and pull requests it concerns.
type watches struct {
	m            *manager.Manager
	refs         *references
	strategies   *controller.Controller
	pullRequests *controller.Controller
}

func (w *watches) register() error {
	pi := w.m.SluiceInformers.Promoter().V1alpha1()
	strategyKind := schema.GroupKind{Group: promoterv1alpha1.GroupName, Kind: "PromotionStrategy"}
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{pi.PromotionStrategies().Informer(), handler.EnqueueObject(w.strategies)},
		{pi.PullRequests().Informer(), handler.EnqueueObject(w.pullRequests)},
		{pi.PullRequests().Informer(), handler.EnqueueOwner(w.strategies, strategyKind)},
		// The promoter reads a CommitStatus's spec (its phase), not the status the
		// commitstatus-controller writes on each mirror.
		{w.refs.commitStatuses, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(w.strategies, w.byCommitStatus))},
		// A fixed ScmRepository or ScmProvider (a stalled strategy's usual cure) re-evaluates at once.
		{w.refs.repos, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(w.strategies, func(o metav1.Object) []string { return w.byRepository(o.GetNamespace(), o.GetName()) }))},
		{w.refs.providers, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(w.strategies, w.byProvider))},
		// A PullRequest stalled on its repository (a revert's, say, which no strategy owns) too.
		{w.refs.repos, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(w.pullRequests, w.pullRequestsOf))},
		// Gates are read by their status: every change counts.
		{w.refs.gates, handler.EnqueueMapped(w.strategies, w.byGate)},
		// So are RevertCommits: the rollback-controller writes the phase that holds.
		{w.refs.revertCommits, handler.EnqueueMapped(w.strategies, byRevertCommit)},
	} {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return err
		}
	}
	// A CRD that comes (once read) or goes changes what every object can do.
	w.refs.kinds.OnChange(func() {
		enqueueAll(w.strategies, pi.PromotionStrategies().Informer())
		enqueueAll(w.pullRequests, pi.PullRequests().Informer())
	})
	return nil
}

func enqueueAll(c *controller.Controller, inf cache.SharedIndexInformer) {
	for _, key := range inf.GetStore().ListKeys() {
		c.Enqueue(key)
	}
}

func byRevertCommit(obj metav1.Object) []string {
	rc, ok := obj.(*rollbackv1alpha1.RevertCommit)
	if !ok {
		return nil
	}
	return []string{rc.Namespace + "/" + rc.Spec.PromotionStrategyRef.Name}
}

func (w *watches) byRepository(ns, repo string) []string {
	list, _ := w.m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies().Lister().PromotionStrategies(ns).List(labels.Everything())
	var keys []string
	for _, ps := range list {
		if ps.Spec.RepositoryRef.Name == repo {
			keys = append(keys, ps.Namespace+"/"+ps.Name)
		}
	}
	return keys
}

func (w *watches) pullRequestsOf(repo metav1.Object) []string {
	list, _ := w.m.SluiceInformers.Promoter().V1alpha1().PullRequests().Lister().PullRequests(repo.GetNamespace()).List(labels.Everything())
	var keys []string
	for _, pr := range list {
		if pr.Spec.RepositoryRef.Name == repo.GetName() {
			keys = append(keys, pr.Namespace+"/"+pr.Name)
		}
	}
	return keys
}

func (w *watches) byCommitStatus(obj metav1.Object) []string {
	cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
	if !ok {
		return nil
	}
	return w.byRepository(cs.Namespace, cs.Spec.RepositoryRef.Name)
}

func (w *watches) byProvider(obj metav1.Object) []string {
	repos, _ := w.refs.repoLister().ScmRepositories(obj.GetNamespace()).List(labels.Everything())
	var keys []string
	for _, gr := range repos {
		if gr.Spec.ProviderRef.Name == obj.GetName() {
			keys = append(keys, w.byRepository(gr.Namespace, gr.Name)...)
		}
	}
	return keys
}

func (w *watches) byGate(obj metav1.Object) []string {
	g, ok := obj.(*gatingv1alpha1.Gate)
	if !ok {
		return nil
	}
	list, _ := w.m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies().Lister().List(labels.Everything())
	var keys []string
	for _, ps := range list {
		if referencesGate(ps, g.Namespace, g.Name) {
			keys = append(keys, ps.Namespace+"/"+ps.Name)
		}
	}
	return keys
}

func referencesGate(ps *promoterv1alpha1.PromotionStrategy, ns, name string) bool {
	for _, e := range ps.Spec.Environments {
		if e.Gates == nil {
			continue
		}
		for _, r := range e.Gates.Refs {
			gns := r.Namespace
			if gns == "" {
				gns = ps.Namespace
			}
			if gns == ns && r.Name == name {
				return true
			}
		}
	}
	return false
}
