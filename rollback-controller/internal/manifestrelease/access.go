package manifestrelease

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/apply"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// Verbs a plan needs: apply is a server-side apply that may create, waits list by label, and
// deletes read the object first to check it is the release's.
var (
	applyVerbs  = []string{"create", "patch", "get", "list"}
	deleteVerbs = []string{"delete", "get"}
	testVerbs   = []string{"create", "patch", "delete", "get", "list"}
)

// plan is everything an operation is about to do to the cluster, for the access check.
type plan struct {
	apply    []*unstructured.Unstructured
	stale    []manifest.Ref
	tests    []manifest.Ref
	snapshot int64
}

func (p plan) needs(mr *rollbackv1.ManifestRelease) []apply.Need {
	needs := apply.Needs(manifest.Inventory(p.apply), applyVerbs...)
	needs = append(needs, apply.Needs(p.stale, deleteVerbs...)...)
	needs = append(needs, apply.Needs(p.tests, testVerbs...)...)
	if p.snapshot > 0 {
		head := manifest.Ref{Version: "v1", Kind: "Secret", Namespace: mr.Namespace, Name: snapshot.HeadName(mr.Name, p.snapshot)}
		needs = append(needs, apply.Needs([]manifest.Ref{head}, "get", "create", "delete")...)
	}
	return needs
}

// checkAccess stalls the release, before anything is written, when the identity it acts as
// lacks a right the plan needs; the condition names the ServiceAccount, the verb and the object.
// It is looked at again with a growing delay (the RBAC is not watched) and on any change to the
// release, such as reconcile.fluxcd.io/requestedAt.
func (r *Reconciler) checkAccess(ctx context.Context, mr *rollbackv1.ManifestRelease, action string, p plan) (controller.Result, bool, error) {
	err := r.Applier.Check(ctx, r.reviewer, p.needs(mr), manifest.CRDNamesOf(p.apply))
	var denied *apply.DeniedError
	switch {
	case err == nil:
		return controller.Result{}, false, nil
	case errors.As(err, &denied):
		message := action + " was not started, nothing was applied: " + denied.Error()
		res, err := r.stall(ctx, mr, ReasonForbidden, message, retryDelay(mr, ReasonForbidden, r.Clock.Now()))
		return res, true, err
	case apierrors.IsForbidden(err):
		// The controller itself may not impersonate the ServiceAccount.
		res, err := r.stall(ctx, mr, ReasonForbidden, action+" was not started: "+err.Error(), retryDelay(mr, ReasonForbidden, r.Clock.Now()))
		return res, true, err
	}
	return controller.Result{}, false, err
}

// Delays of a release stalled on something this controller does not watch (RBAC): the first
// look again comes soon, then each waits as long as the problem has lasted, up to spec.interval.
const minRetryDelay = 5 * time.Second

// retryDelay is how long to wait before looking again at a release stalled for reason.
func retryDelay(mr *rollbackv1.ManifestRelease, reason string, now time.Time) time.Duration {
	limit := max(durationOr(mr.Spec.Interval, 5*time.Minute), minRetryDelay)
	c := conditions.Get(mr.Status.Conditions, conditions.Stalled)
	if c == nil || c.Reason != reason {
		return minRetryDelay
	}
	return min(max(now.Sub(c.LastTransitionTime.Time), minRetryDelay), limit)
}
