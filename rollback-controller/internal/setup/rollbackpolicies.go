package setup

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
)

// addRollbackPolicies registers the RollbackPolicy reconciler, brought back by its own changes,
// its PromotionStrategy's, its RevertCommits', the CommitStatuses of its repository, and a peer
// CRD that comes or goes.
func (w *wiring) addRollbackPolicies() error {
	m := w.m
	pi, ci := w.peers.Promoter().V1alpha1(), w.peers.Commitstatus().V1alpha1()
	strategies := pi.PromotionStrategies()
	reverts := m.SluiceInformers.Rollback().V1alpha1().RevertCommits()
	informer := m.SluiceInformers.Rollback().V1alpha1().RollbackPolicies()
	c := m.NewController(RollbackPolicyControllerName, &rollbackpolicy.Reconciler{
		Client: m.Sluice, Policies: informer.Lister(), Strategies: strategies.Lister(),
		CommitStatuses: ci.CommitStatuses().Lister(), RevertCommits: reverts.Lister(),
		Recorder: m.Recorder, Metrics: w.metrics, Log: m.Log, PeerCRDs: w.peerCRDs, StalledRecheck: w.cfg.StalledRecheck, Clock: m.Clock,
	})
	w.kinds.OnChange(func() { handler.EnqueueStore(c, informer.Informer().GetStore()) })
	return handler.Register(
		handler.Watch(informer.Informer(), handler.EnqueueObject(c)),
		handler.Watch(strategies.Informer(), handler.EnqueueMapped(c, policiesOf(informer.Lister()))),
		handler.Watch(reverts.Informer(), handler.EnqueueMapped(c, policyOfRevert)),
		handler.Watch(ci.CommitStatuses().Informer(), handler.EnqueueMapped(c, policiesOfRepository(informer.Lister(), strategies.Lister()))),
	)
}

// policyOfRevert maps a RevertCommit to the RollbackPolicy that opened it.
func policyOfRevert(obj metav1.Object) []string {
	if p := obj.GetLabels()[rollbackv1alpha1.PolicyLabel]; p != "" {
		return []string{obj.GetNamespace() + "/" + p}
	}
	return nil
}

// policiesOf maps a PromotionStrategy to the RollbackPolicies that select it.
func policiesOf(list rollbacklisters.RollbackPolicyLister) handler.MapFunc {
	return func(obj metav1.Object) []string {
		ps, _ := list.RollbackPolicies(obj.GetNamespace()).List(labels.Everything())
		var keys []string
		for _, p := range ps {
			if p.Spec.PromotionStrategyRef.Name == obj.GetName() {
				keys = append(keys, p.Namespace+"/"+p.Name)
			}
		}
		return keys
	}
}

// policiesOfRepository maps a CommitStatus to the RollbackPolicies of the strategies on its
// repository: a check that fails or recovers concerns them.
func policiesOfRepository(list rollbacklisters.RollbackPolicyLister, strategies promoterlisters.PromotionStrategyLister) handler.MapFunc {
	byStrategy := policiesOf(list)
	return func(obj metav1.Object) []string {
		cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
		if !ok {
			return nil
		}
		all, _ := strategies.PromotionStrategies(cs.Namespace).List(labels.Everything())
		var keys []string
		for _, ps := range all {
			if ps.Spec.RepositoryRef.Name == cs.Spec.RepositoryRef.Name {
				keys = append(keys, byStrategy(ps)...)
			}
		}
		return keys
	}
}
