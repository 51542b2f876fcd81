package setup

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/scmgit"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
	"github.com/sluicehq/sluice/rollback-controller/internal/rollbackpolicy"
)

// Reverts registers the RevertCommit and RollbackPolicy reconcilers, and the watch of the peer
// CRDs they need.
func Reverts(m *manager.Manager, cfg Config) error {
	cache, err := git.NewCache(cfg.GitCacheDir, m.Log)
	if err != nil {
		return fmt.Errorf("git cache in %s: %w", cfg.GitCacheDir, err)
	}
	peer, err := newPeers(m)
	if err != nil {
		return err
	}
	pi, ci, si := peer.factory.Promoter().V1alpha1(), peer.factory.Commitstatus().V1alpha1(), peer.factory.Scm().V1alpha1()
	strategies, pullRequests := pi.PromotionStrategies(), pi.PullRequests()
	mets := metrics.New(m.Metrics)
	revertInformer := m.SluiceInformers.Rollback().V1alpha1().RevertCommits()
	policyInformer := m.SluiceInformers.Rollback().V1alpha1().RollbackPolicies()

	reverts := m.NewController(RevertCommitControllerName, &revertcommit.Reconciler{
		Client: m.Sluice, RevertCommits: revertInformer.Lister(), Strategies: strategies.Lister(), CommitStatuses: ci.CommitStatuses().Lister(),
		Opener:   &scmgit.Opener{Kube: m.Kube, Repos: si.ScmRepositories().Lister(), Providers: si.ScmProviders().Lister(), Cache: cache},
		Recorder: m.Recorder, Metrics: mets, Log: m.Log, PeerCRDs: peer.Status, Clock: m.Clock,
		PollInterval: cfg.PollInterval, StalledRecheck: cfg.StalledRecheck, HistoryLimit: revertcommit.DefaultHistoryLimit,
	})
	policies := m.NewController(RollbackPolicyControllerName, &rollbackpolicy.Reconciler{
		Client: m.Sluice, Policies: policyInformer.Lister(), Strategies: strategies.Lister(),
		CommitStatuses: ci.CommitStatuses().Lister(), RevertCommits: revertInformer.Lister(),
		Recorder: m.Recorder, Metrics: mets, Log: m.Log, PeerCRDs: peer.Status, StalledRecheck: cfg.StalledRecheck, Clock: m.Clock,
	})

	revertKind := schema.GroupKind{Group: rollbackv1alpha1.GroupName, Kind: "RevertCommit"}
	policyOfRevert := func(obj metav1.Object) []string {
		if p := obj.GetLabels()[rollbackv1alpha1.PolicyLabel]; p != "" {
			return []string{obj.GetNamespace() + "/" + p}
		}
		return nil
	}
	if err := wire(
		on(revertInformer.Informer(), handler.EnqueueObject(reverts)),
		on(pullRequests.Informer(), handler.EnqueueOwner(reverts, revertKind)),
		on(strategies.Informer(), handler.EnqueueMapped(reverts, openRevertsOf(revertInformer.Lister()))),
		on(ci.CommitStatuses().Informer(), handler.EnqueueMapped(reverts, revertsCheckedBy(revertInformer.Lister()))),
		on(policyInformer.Informer(), handler.EnqueueObject(policies)),
		on(strategies.Informer(), handler.EnqueueMapped(policies, policiesOf(policyInformer.Lister()))),
		on(revertInformer.Informer(), handler.EnqueueMapped(policies, policyOfRevert)),
		on(ci.CommitStatuses().Informer(), handler.EnqueueMapped(policies, policiesOfRepository(policyInformer.Lister(), strategies.Lister()))),
	); err != nil {
		return err
	}
	return peer.start(m,
		enqueueAll(revertInformer.Informer(), reverts.Enqueue),
		enqueueAll(policyInformer.Informer(), policies.Enqueue))
}

// openRevertsOf maps a PromotionStrategy to its RevertCommits still under way: a strategy that
// appears, or whose status moves (a merge outside Sluice), concerns them.
func openRevertsOf(list rollbacklisters.RevertCommitLister) handler.MapFunc {
	return func(obj metav1.Object) []string {
		rcs, _ := list.RevertCommits(obj.GetNamespace()).List(labels.Everything())
		var keys []string
		for _, rc := range rcs {
			if rc.Spec.PromotionStrategyRef.Name == obj.GetName() &&
				!revertcommit.Final(rc.Status.Phase) {
				keys = append(keys, rc.Namespace+"/"+rc.Name)
			}
		}
		return keys
	}
}

// revertsCheckedBy maps a CommitStatus to the open RevertCommits whose revert commit it reports
// on: a required check that passes lets the revert merge.
func revertsCheckedBy(list rollbacklisters.RevertCommitLister) handler.MapFunc {
	return func(obj metav1.Object) []string {
		cs, ok := obj.(*commitstatusv1alpha1.CommitStatus)
		if !ok {
			return nil
		}
		rcs, _ := list.RevertCommits(obj.GetNamespace()).List(labels.Everything())
		var keys []string
		for _, rc := range rcs {
			if rc.Status.RevertSHA == cs.Spec.SHA && len(rc.Spec.RequiredCommitStatuses) > 0 && !revertcommit.Final(rc.Status.Phase) {
				keys = append(keys, rc.Namespace+"/"+rc.Name)
			}
		}
		return keys
	}
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

type registration struct {
	inf cache.SharedIndexInformer
	h   cache.ResourceEventHandler
}

func on(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) registration {
	return registration{inf, h}
}

// wire adds each handler to its informer.
func wire(regs ...registration) error {
	for _, r := range regs {
		if _, err := r.inf.AddEventHandler(r.h); err != nil {
			return err
		}
	}
	return nil
}
