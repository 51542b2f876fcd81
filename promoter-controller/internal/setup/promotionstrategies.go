package setup

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	commitstatuslisters "github.com/sluicehq/sluice/api/generated/listers/commitstatus/v1alpha1"
	gatinglisters "github.com/sluicehq/sluice/api/generated/listers/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
)

// addPromotionStrategies registers the PromotionStrategy reconciler, brought back by its own
// changes, its PullRequests, and every object of another chart it reads: a CommitStatus of its
// repository, the ScmRepository and ScmProvider, its Gates, its RevertCommits, a CRD that comes
// or goes. addPullRequests comes first: the reconciler hands PullRequests to their queue.
func (w *wiring) addPromotionStrategies() error {
	m := w.m
	pi := m.SluiceInformers.Promoter().V1alpha1()
	w.fetches = &promotionstrategy.Fetches{}
	c := m.NewController("promotionstrategy", &promotionstrategy.Reconciler{
		Client: m.Sluice, Strategies: pi.PromotionStrategies().Lister(),
		ProposedCommits: pi.ProposedCommits().Lister(),
		PullRequests:    pi.PullRequests().Lister(),
		CommitStatuses:  commitstatuslisters.NewCommitStatusLister(w.commitStatuses.GetIndexer()),
		Gates:           gatinglisters.NewGateLister(w.gates.GetIndexer()), Holds: w.holds, Kinds: w.kinds,
		Repositories: w.resolver, Recorder: m.Recorder, Metrics: w.metrics, Log: m.Log,
		PullRequestQueue: w.pullRequests, Clock: m.Clock, Fetches: w.fetches,
	})
	w.strategies = c
	strategyKind := schema.GroupKind{Group: promoterv1alpha1.GroupName, Kind: "PromotionStrategy"}
	// A CRD that comes (once read) or goes changes what every strategy can do.
	w.kinds.OnChange(func() { handler.EnqueueStore(c, pi.PromotionStrategies().Informer().GetStore()) })
	return handler.Register(
		handler.Watch(pi.PromotionStrategies().Informer(), handler.EnqueueObject(c)),
		handler.Watch(pi.PullRequests().Informer(), handler.EnqueueOwner(c, strategyKind)),
		// The promoter reads a CommitStatus's spec (its phase), not the status the
		// commitstatus-controller writes on each mirror.
		handler.Watch(w.commitStatuses, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(c, w.byCommitStatus))),
		// A fixed ScmRepository or ScmProvider (a stalled strategy's usual cure) re-evaluates at once.
		handler.Watch(w.repos, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(c, func(o metav1.Object) []string { return w.byRepository(o.GetNamespace(), o.GetName()) }))),
		handler.Watch(w.providers, handler.OnSpecOrMetadataChange(handler.EnqueueMapped(c, w.byProvider))),
		// Gates are read by their status: every change counts.
		handler.Watch(w.gates, handler.EnqueueMapped(c, w.byGate)),
		// So are RevertCommits: the rollback-controller writes the phase that holds.
		handler.Watch(w.revertCommits, handler.EnqueueMapped(c, byRevertCommit)),
	)
}

func byRevertCommit(obj metav1.Object) []string {
	rc, ok := obj.(*rollbackv1alpha1.RevertCommit)
	if !ok {
		return nil
	}
	return []string{rc.Namespace + "/" + rc.Spec.PromotionStrategyRef.Name}
}

func (w *wiring) byRepository(ns, repo string) []string {
	list, _ := w.m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies().Lister().PromotionStrategies(ns).List(labels.Everything())
	var keys []string
	for _, ps := range list {
		if ps.Spec.RepositoryRef.Name == repo {
			keys = append(keys, ps.Namespace+"/"+ps.Name)
		}
	}
	return keys
}

func (w *wiring) byCommitStatus(obj metav1.Object) []string {
	cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
	if !ok {
		return nil
	}
	return w.byRepository(cs.Namespace, cs.Spec.RepositoryRef.Name)
}

func (w *wiring) byProvider(obj metav1.Object) []string {
	repos, _ := w.repoLister().ScmRepositories(obj.GetNamespace()).List(labels.Everything())
	var keys []string
	for _, gr := range repos {
		if gr.Spec.ProviderRef.Name == obj.GetName() {
			keys = append(keys, w.byRepository(gr.Namespace, gr.Name)...)
		}
	}
	return keys
}

func (w *wiring) byGate(obj metav1.Object) []string {
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
