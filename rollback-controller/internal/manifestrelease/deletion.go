package manifestrelease

import (
	"context"
	"encoding/json"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// Reasons of the Event that says what the deletion of a release did with its objects.
const (
	ReasonObjectsDeleted = "ObjectsDeleted"
	ReasonObjectsLeft    = "ObjectsLeft"
)

// patchFinalizers writes the finalizers of mr, with the controller's own rights (they are its
// bookkeeping, not the tenant's), guarded by the resource version read.
func (r *Reconciler) patchFinalizers(ctx context.Context, mr *rollbackv1.ManifestRelease, finalizers []string) (*rollbackv1.ManifestRelease, error) {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": mr.ResourceVersion}})
	if err != nil {
		return nil, err
	}
	return r.Client.RollbackV1alpha1().ManifestReleases(mr.Namespace).Patch(ctx, mr.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// deletingAction names what a deleted release does with its objects, in its conditions.
const deletingAction = "deleting the objects of the deleted release"

// checkDeletion finds a right the identity lacks to delete the objects of a deleted release,
// before any is deleted.
func (r *Reconciler) checkDeletion(ctx context.Context, mr *rollbackv1.ManifestRelease) (*problem, error) {
	err := r.Applier.Check(ctx, r.reviewer, plan{stale: fromInventory(mr.Status.Inventory)}.needs(mr), nil)
	var denied *apply.DeniedError
	if errors.As(err, &denied) || apierrors.IsForbidden(err) {
		return &problem{Reason: ReasonForbidden, Message: err.Error(), Backoff: true}, nil
	}
	return nil, err
}

// notOwned splits the objects Delete left because they are not labelled as the release's from
// the errors that remain.
func notOwned(err error) ([]manifest.Ref, error) {
	if err == nil {
		return nil, nil
	}
	var left []manifest.Ref
	var rest []error
	all := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		all = joined.Unwrap()
	}
	for _, e := range all {
		var ae *apply.Error
		if errors.As(e, &ae) && errors.Is(e, apply.ErrNotOwned) {
			left = append(left, ae.Object)
			continue
		}
		rest = append(rest, e)
	}
	return left, errors.Join(rest...)
}
