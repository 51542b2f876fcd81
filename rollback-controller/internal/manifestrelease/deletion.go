package manifestrelease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/apply"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// Reasons of the Event that says what the deletion of a release did with its objects.
const (
	ReasonObjectsDeleted = "ObjectsDeleted"
	ReasonObjectsLeft    = "ObjectsLeft"
)

// holdForDeletion adds the finalizer to a release that lacks it, before the release does
// anything to the cluster, so that its deletion waits for its objects to be pruned or left.
func (r *Reconciler) holdForDeletion(ctx context.Context, mr *rollbackv1.ManifestRelease) (*rollbackv1.ManifestRelease, error) {
	if slices.Contains(mr.Finalizers, rollbackv1.ManifestReleaseFinalizer) {
		return mr, nil
	}
	return r.patchFinalizers(ctx, mr, append(slices.Clone(mr.Finalizers), rollbackv1.ManifestReleaseFinalizer))
}

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

// finalize carries out spec.prune for a release being deleted, as Flux's Kustomization does:
// with prune (the default) its objects are deleted, as the identity it acts as, adopted ones given
// back their previous content; without it, or while suspended, they are left. Either way an Event
// and the log say which, and the finalizer goes. Objects that cannot be deleted keep the release,
// Stalled with a condition that says how to let it go, and looked at again with a growing delay.
func (r *Reconciler) finalize(ctx context.Context, mr *rollbackv1.ManifestRelease, suspended bool) (controller.Result, error) {
	if !slices.Contains(mr.Finalizers, rollbackv1.ManifestReleaseFinalizer) {
		return controller.Result{}, nil
	}
	r.SourceWatches.Forget(mr.Namespace + "/" + mr.Name)
	acting, err := r.actingFor(mr)
	if err != nil {
		return controller.Result{}, err
	}
	inventory := fromInventory(mr.Status.Inventory)
	reason, message := ReasonObjectsLeft, ""
	switch {
	case len(inventory) == 0:
		message = "the release is deleted; it had no objects"
	case suspended:
		message = fmt.Sprintf("the release is deleted while suspended; its %d objects are left in place: %s", len(inventory), manifest.Names(inventory, 3))
	case !pruneEnabled(mr):
		message = fmt.Sprintf("the release is deleted with spec.prune false; its %d objects are left in place: %s", len(inventory), manifest.Names(inventory, 3))
	default:
		done, res, blocked, err := acting.pruneAll(ctx, mr, inventory)
		if blocked || err != nil {
			return res, err
		}
		reason, message = ReasonObjectsDeleted, done
	}
	if _, err := r.patchFinalizers(ctx, mr, slices.DeleteFunc(slices.Clone(mr.Finalizers), func(f string) bool { return f == rollbackv1.ManifestReleaseFinalizer })); err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	r.event(corev1.EventTypeNormal, reason, message)(mr)
	return controller.Result{}, nil
}

// pruneAll deletes the objects of a deleted release in prune order (the reverse of apply order:
// instances before the CRDs that define them, Namespaces last). Objects no longer labelled as
// the release's are left to whoever took them. It returns what it did, for the Event; blocked
// when the release stays, Stalled.
func (r *Reconciler) pruneAll(ctx context.Context, mr *rollbackv1.ManifestRelease, inventory []manifest.Ref) (string, controller.Result, bool, error) {
	const action = "deleting the objects of the deleted release"
	hint := fmt.Sprintf("; the release stays until they are deleted. To delete it and leave them in place: kubectl -n %s patch manifestrelease %s --type=merge -p '{\"spec\":{\"prune\":false}}'", mr.Namespace, mr.Name)
	err := r.Applier.Check(ctx, r.reviewer, plan{stale: inventory}.needs(mr), nil)
	var denied *apply.DeniedError
	if errors.As(err, &denied) || apierrors.IsForbidden(err) {
		res, err := r.stall(ctx, mr, ReasonForbidden, action+" was not started: "+err.Error()+hint, retryDelay(mr, ReasonForbidden, r.Clock.Now()))
		return "", res, true, err
	}
	if err != nil {
		return "", controller.Result{}, false, err
	}
	deleted, err := r.Applier.Delete(ctx, manifest.Stale(inventory, nil), ownerLabels(mr, false))
	left, err := notOwned(err)
	if err != nil {
		res, err := r.stall(ctx, mr, ReasonPruneFailed, action+" failed: "+err.Error()+hint, retryDelay(mr, ReasonPruneFailed, r.Clock.Now()))
		return "", res, true, err
	}
	message := fmt.Sprintf("the release is deleted; its %d objects were deleted as %s", len(deleted), r.reviewer.User)
	if len(left) > 0 {
		message += fmt.Sprintf("; %d that are no longer labelled as its own are left: %s", len(left), manifest.Names(left, 3))
	}
	return message, controller.Result{}, false, nil
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
