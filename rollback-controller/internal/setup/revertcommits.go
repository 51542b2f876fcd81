package setup

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/scmgit"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
)

// addRevertCommits registers the RevertCommit reconciler, brought back by its own changes, its
// PullRequest's, its PromotionStrategy's while it is under way, and a peer CRD that comes or goes.
func (w *wiring) addRevertCommits() error {
	m, cfg := w.m, w.cfg
	cache, err := git.NewCache(cfg.GitCacheDir, m.Log)
	if err != nil {
		return fmt.Errorf("git cache in %s: %w", cfg.GitCacheDir, err)
	}
	pi, si, ci := w.peers.Promoter().V1alpha1(), w.peers.Scm().V1alpha1(), w.peers.Commitstatus().V1alpha1()
	strategies := pi.PromotionStrategies()
	informer := m.SluiceInformers.Rollback().V1alpha1().RevertCommits()
	c := m.NewController(RevertCommitControllerName, &revertcommit.Reconciler{
		Client: m.Sluice, RevertCommits: informer.Lister(), Strategies: strategies.Lister(), PullRequests: pi.PullRequests().Lister(), CommitStatuses: ci.CommitStatuses().Lister(),
		Opener:   &scmgit.Opener{Kube: m.Kube, Repos: si.ScmRepositories().Lister(), Providers: si.ScmProviders().Lister(), Cache: cache},
		Recorder: m.Recorder, Metrics: w.metrics, Log: m.Log, PeerCRDs: w.peerCRDs, Clock: m.Clock, FluxSources: w.fluxSources,
		PollInterval: cfg.PollInterval, StalledRecheck: cfg.StalledRecheck, HistoryLimit: revertcommit.DefaultHistoryLimit,
	})
	revertKind := schema.GroupKind{Group: rollbackv1alpha1.GroupName, Kind: "RevertCommit"}
	w.kinds.OnChange(func() { handler.EnqueueStore(c, informer.Informer().GetStore()) })
	return handler.Register(
		handler.Watch(informer.Informer(), handler.EnqueueObject(c)),
		handler.Watch(pi.PullRequests().Informer(), handler.EnqueueOwner(c, revertKind)),
		handler.Watch(strategies.Informer(), handler.EnqueueMapped(c, openRevertsOf(informer.Lister()))),
		handler.Watch(ci.CommitStatuses().Informer(), handler.EnqueueMapped(c, revertsCheckedBy(informer.Lister()))),
	)
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
