package manifestrelease

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
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

// checkAccess finds, before anything is written, a right the plan needs that the identity the
// release acts as lacks; the message names the ServiceAccount, the verb and the object. The
// release is looked at again with a growing delay (the RBAC is not watched) and on any change to
// it, such as reconcile.fluxcd.io/requestedAt.
func (r *Reconciler) checkAccess(ctx context.Context, mr *rollbackv1.ManifestRelease, action string, p plan) (*problem, error) {
	err := r.Applier.Check(ctx, r.reviewer, p.needs(mr), manifest.CRDNamesOf(p.apply))
	var denied *apply.DeniedError
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &denied):
		return &problem{Reason: ReasonForbidden, Message: action + " was not started, nothing was applied: " + denied.Error(), Backoff: true}, nil
	case apierrors.IsForbidden(err):
		// The controller itself may not impersonate the ServiceAccount.
		return &problem{Reason: ReasonForbidden, Message: action + " was not started: " + err.Error(), Backoff: true}, nil
	}
	return nil, err
}
