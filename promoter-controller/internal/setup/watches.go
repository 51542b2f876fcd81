package setup

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	commitstatusinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/commitstatus/v1alpha1"
	gatinginformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/gating/v1alpha1"
	scminformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/rollbackhold"
)

// references are the objects a strategy names but does not own: read from every namespace the
// controller watches, whatever --watch-label-selector says, so a sharded promoter (a selector
// on its PromotionStrategies) still sees an unlabelled ScmRepository, Gate or CommitStatus.
type references struct {
	factory        sluiceinformers.SharedInformerFactory
	repos          scminformers.ScmRepositoryInformer
	providers      scminformers.ScmProviderInformer
	commitStatuses commitstatusinformers.CommitStatusInformer
	gates          gatinginformers.GateInformer
}

func newReferences(m *manager.Manager) *references {
	f := sluiceinformers.NewSharedInformerFactoryWithOptions(m.Sluice, 0, sluiceinformers.WithNamespace(m.Options.Namespace))
	r := &references{factory: f, repos: f.Scm().V1alpha1().ScmRepositories(), providers: f.Scm().V1alpha1().ScmProviders(),
		commitStatuses: f.Commitstatus().V1alpha1().CommitStatuses(), gates: f.Gating().V1alpha1().Gates()}
	synced := []cache.InformerSynced{r.repos.Informer().HasSynced, r.providers.Informer().HasSynced,
		r.commitStatuses.Informer().HasSynced, r.gates.Informer().HasSynced}
	m.WaitFor(synced...)
	// Started on every replica, as the manager's own caches are, so a standby is warm.
	m.AddServer(func(ctx context.Context) error {
		f.Start(ctx.Done())
		<-ctx.Done()
		f.Shutdown()
		return nil
	})
	return r
}

// watches maps every event to the strategies and pull requests it concerns.
type watches struct {
	m            *manager.Manager
	refs         *references
	strategies   *controller.Controller
	pullRequests *controller.Controller
	holds        *rollbackhold.Holds
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
		{w.refs.commitStatuses.Informer(), handler.EnqueueMapped(w.strategies, w.byCommitStatus)},
		// A fixed ScmRepository or ScmProvider (a stalled strategy's usual cure) re-evaluates at once.
		{w.refs.repos.Informer(), handler.EnqueueMapped(w.strategies, func(o metav1.Object) []string { return w.byRepository(o.GetNamespace(), o.GetName()) })},
		{w.refs.providers.Informer(), handler.EnqueueMapped(w.strategies, w.byProvider)},
		// A PullRequest stalled on its repository (a revert's, say, which no strategy owns) too.
		{w.refs.repos.Informer(), handler.EnqueueMapped(w.pullRequests, w.pullRequestsOf)},
		{w.refs.gates.Informer(), handler.EnqueueMapped(w.strategies, w.byGate)},
	} {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return err
		}
	}
	w.holds.OnChange = func(rc *rollbackv1alpha1.RevertCommit) {
		w.strategies.Enqueue(rc.Namespace + "/" + rc.Spec.PromotionStrategyRef.Name)
	}
	w.holds.OnCRD = func() {
		list, _ := pi.PromotionStrategies().Lister().List(labels.Everything())
		for _, ps := range list {
			w.strategies.Enqueue(ps.Namespace + "/" + ps.Name)
		}
	}
	return nil
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
	repos, _ := w.refs.repos.Lister().ScmRepositories(obj.GetNamespace()).List(labels.Everything())
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
