// Package rollbackhold tells the promoter which dry SHAs a revert keeps out of an environment.
//
// It reads RevertCommit status (rollback.sluice.dev), written by the rollback-controller: the
// two controllers coordinate only through that object. A RevertCommit holds while its phase is
// Pending (with a bad dry SHA known), Open or Merged, and until a person deletes it or annotates
// it rollback.sluice.dev/lift-hold. The rollback-controller is optional: without the RevertCommit
// CRD nothing is held, and a CRD installed later is noticed at once, from a watch on that one CRD.
//
// RevertCommits are referenced objects: they are read from every namespace the controller
// watches, whatever --watch-label-selector says, as ScmRepositories and Gates are.
package rollbackhold

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/rollback/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// CRDName is the RevertCommit CustomResourceDefinition.
const CRDName = "revertcommits.rollback.sluice.dev"

// Holds follows the RevertCommits of the namespaces the controller watches.
type Holds struct {
	client    sluice.Interface
	namespace string
	crd       cache.SharedIndexInformer
	// OnChange receives every RevertCommit that comes, changes or goes, and OnCRD is called when
	// the CRD comes or goes; both are set before Run.
	OnChange func(rc *rollbackv1alpha1.RevertCommit)
	OnCRD    func()

	mu       sync.Mutex
	ctx      context.Context
	stop     context.CancelFunc
	informer cache.SharedIndexInformer
	lister   rollbacklisters.RevertCommitLister
}

// New watches the RevertCommit CRD through meta, and RevertCommits in namespace ("" for all)
// through client once the CRD is there.
func New(meta metadata.Interface, client sluice.Interface, namespace string) *Holds {
	byName := func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + CRDName }
	h := &Holds{client: client, namespace: namespace,
		crd: metadatainformer.NewFilteredMetadataInformer(meta, crdwatch.Resource, metav1.NamespaceAll, 0, cache.Indexers{}, byName).Informer()}
	_, _ = h.crd.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.crdChanged(true) },
		DeleteFunc: func(any) { h.crdChanged(false) },
	})
	return h
}

// Run watches until ctx ends. Run it on every replica (manager.AddServer), so a standby is warm.
func (h *Holds) Run(ctx context.Context) error {
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	h.crd.RunWithContext(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil {
		h.stop()
	}
	return nil
}

// HasSynced reports whether the CRD is known to be absent, or present with its RevertCommits read.
func (h *Holds) HasSynced() bool {
	if !h.crd.HasSynced() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.informer == nil || h.informer.HasSynced()
}

func (h *Holds) crdChanged(present bool) {
	h.mu.Lock()
	switch {
	case h.ctx == nil:
		h.mu.Unlock()
		return
	case present && h.informer == nil:
		h.startLocked()
	case !present && h.informer != nil:
		h.stop()
		h.informer, h.lister, h.stop = nil, nil, nil
	}
	h.mu.Unlock()
	if h.OnCRD != nil {
		h.OnCRD()
	}
}

func (h *Holds) startLocked() {
	ctx, stop := context.WithCancel(h.ctx)
	inf := rollbackinformers.NewRevertCommitInformer(h.client, h.namespace, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	notify := func(obj any) {
		if o, ok := handler.Object(obj); ok && h.OnChange != nil {
			if rc, ok := o.(*rollbackv1alpha1.RevertCommit); ok {
				h.OnChange(rc)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) }, DeleteFunc: notify,
	})
	h.informer, h.lister, h.stop = inf, rollbacklisters.NewRevertCommitLister(inf.GetIndexer()), stop
	go inf.RunWithContext(ctx)
}

// For returns the holds on environment branch of strategy namespace/name. It fails while the
// RevertCommits are not read yet: promoting then could bring a reverted commit back.
func (h *Holds) For(namespace, strategy, branch string) ([]promotion.Hold, error) {
	h.mu.Lock()
	inf, lister := h.informer, h.lister
	h.mu.Unlock()
	if inf == nil {
		if !h.crd.HasSynced() {
			return nil, fmt.Errorf("the RevertCommit CRD is not looked up yet")
		}
		return nil, nil
	}
	if !inf.HasSynced() {
		return nil, fmt.Errorf("RevertCommits are not read yet")
	}
	list, err := lister.RevertCommits(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []promotion.Hold
	for _, rc := range list {
		if rc.Spec.PromotionStrategyRef.Name != strategy || rc.Spec.ActiveBranch != branch {
			continue
		}
		if dry := HeldDrySHA(rc); dry != "" {
			out = append(out, promotion.Hold{RevertCommit: rc.Namespace + "/" + rc.Name, DrySHA: dry})
		}
	}
	return out, nil
}

// HeldDrySHA is the dry SHA rc keeps out of its environment, or "" when it holds nothing.
func HeldDrySHA(rc *rollbackv1alpha1.RevertCommit) string {
	if rc.DeletionTimestamp != nil {
		return ""
	}
	if _, lifted := rc.Annotations[rollbackv1alpha1.LiftHoldAnnotation]; lifted {
		return ""
	}
	bad := rc.Status.BadDrySHA
	if bad == "" {
		bad = rc.Spec.BadDrySHA
	}
	switch rc.Status.Phase {
	// A RevertCommit not yet seen by the rollback-controller (no phase) is as good as Pending.
	case "", rollbackv1alpha1.RevertPending, rollbackv1alpha1.RevertOpen, rollbackv1alpha1.RevertMerged:
		return bad
	}
	return ""
}
