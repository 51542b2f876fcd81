package actions

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	gatingclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/gating/v1alpha1"
)

// MaxApprovals is the CRD's bound on spec.approvals.
const MaxApprovals = 32

// TooManyApprovalsError says a gate approves as many revisions as it can already.
type TooManyApprovalsError struct {
	Namespace, Name string
	Count           int
}

func (e *TooManyApprovalsError) Error() string {
	return fmt.Sprintf("gate %s/%s approves %d revisions already, the most it can; remove some from spec.approvals with `kubectl edit gate %s -n %s`",
		e.Namespace, e.Name, e.Count, e.Name, e.Namespace)
}

// Approve adds a to the gate's spec.approvals, replacing an earlier approval of the same
// revision and making room by dropping expired ones, reading the gate again when someone else
// changed it meanwhile. It returns a *TooManyApprovalsError when there is no room.
func Approve(ctx context.Context, gates gatingclient.GateInterface, name string, a gatingv1alpha1.GateApproval, now time.Time, fieldManager string) (*gatingv1alpha1.Gate, error) {
	return updateApprovals(ctx, gates, name, fieldManager, func(g *gatingv1alpha1.Gate) error {
		g.Spec.Approvals = slices.DeleteFunc(g.Spec.Approvals, func(old gatingv1alpha1.GateApproval) bool {
			return old.Revision == a.Revision || (old.Until != nil && !now.Before(old.Until.Time))
		})
		if len(g.Spec.Approvals) >= MaxApprovals {
			return &TooManyApprovalsError{Namespace: g.Namespace, Name: g.Name, Count: len(g.Spec.Approvals)}
		}
		g.Spec.Approvals = append(g.Spec.Approvals, a)
		return nil
	})
}

// RemoveApproval removes the approval of revision from the gate; it reports false, changing
// nothing, when the gate does not approve that revision.
func RemoveApproval(ctx context.Context, gates gatingclient.GateInterface, name, revision, fieldManager string) (*gatingv1alpha1.Gate, bool, error) {
	removed := false
	g, err := updateApprovals(ctx, gates, name, fieldManager, func(g *gatingv1alpha1.Gate) error {
		before := len(g.Spec.Approvals)
		g.Spec.Approvals = slices.DeleteFunc(g.Spec.Approvals, func(old gatingv1alpha1.GateApproval) bool { return old.Revision == revision })
		removed = len(g.Spec.Approvals) < before
		if !removed {
			return errUnchanged
		}
		return nil
	})
	if err == errUnchanged {
		return g, false, nil
	}
	return g, removed, err
}

// errUnchanged stops updateApprovals without a write.
var errUnchanged = fmt.Errorf("unchanged")

// updateApprovals applies change to a fresh copy of the gate and writes it, again on conflict.
func updateApprovals(ctx context.Context, gates gatingclient.GateInterface, name, fieldManager string, change func(*gatingv1alpha1.Gate) error) (*gatingv1alpha1.Gate, error) {
	var updated *gatingv1alpha1.Gate
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := gates.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := g.DeepCopy()
		if err := change(next); err != nil {
			updated = g
			return err
		}
		updated, err = gates.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	return updated, err
}
