// Package rollbackhold tells the promoter which dry SHAs a revert keeps out of an environment.
//
// It reads RevertCommit status (rollback.sluice.dev), written by the rollback-controller: the
// two controllers coordinate only through that object. A RevertCommit holds while its phase is
// Pending (with a bad dry SHA known), Open or Merged, and until a person deletes it or annotates
// it rollback.sluice.dev/lift-hold. The rollback-controller is optional: without the RevertCommit
// CRD nothing is held, and a CRD installed later is noticed at once.
//
// RevertCommits are referenced objects: they are read from every namespace the controller
// watches, whatever --watch-label-selector says. Their informer runs under crdwatch.Kinds, with
// the other kinds the promoter reads from other charts: it starts when the CRD is installed, and
// readiness waits for it when the CRD is there at start.
package rollbackhold

import (
	"errors"

	"k8s.io/apimachinery/pkg/labels"

	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/promotion"
)

// Kinds is the part of crdwatch.Kinds that Holds reads.
type Kinds interface {
	crds.Kinds
	Listed() bool
}

// Holds reads the holds from the RevertCommits of the namespaces the controller watches.
type Holds struct {
	kinds  Kinds
	lister rollbacklisters.RevertCommitLister
}

// New reads RevertCommits through lister, whose informer kinds runs once the RevertCommit CRD
// (crds.RevertCommits) is installed.
func New(kinds Kinds, lister rollbacklisters.RevertCommitLister) *Holds {
	return &Holds{kinds: kinds, lister: lister}
}

// For returns the holds on environment branch of strategy namespace/name. It fails while the
// RevertCommits are not read yet: promoting then could bring a reverted commit back.
func (h *Holds) For(namespace, strategy, branch string) ([]promotion.Hold, error) {
	if !h.kinds.Listed() {
		return nil, errors.New("the installed CRDs are not listed yet, so whether RevertCommits hold anything is not known")
	}
	if len(h.kinds.Missing(crds.RevertCommits)) > 0 {
		return nil, nil
	}
	if !h.kinds.Synced(crds.RevertCommits) {
		return nil, errors.New("RevertCommits are not read yet")
	}
	list, err := h.lister.RevertCommits(namespace).List(labels.Everything())
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
