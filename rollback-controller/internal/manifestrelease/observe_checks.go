package manifestrelease

// The reads that check an operation before anything is written: the rights of the identity the
// release acts as, the objects it would take over, and the CRDs it would change.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
func (r *Reconciler) checkAccess(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, action string, p plan) (*problem, error) {
	err := as.Applier.Check(ctx, as.Reviewer, p.needs(mr), manifest.CRDNamesOf(p.apply))
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

// Reasons an upgrade stops because of what it would take over.
const (
	ReasonNotOwned     = "NotOwned"
	ReasonTestCollides = "TestCollides"
)

// checkOwnership finds what stops an upgrade, before anything is applied, that would take over an object it
// did not create: one that exists, is not in the inventory and is not labelled as this
// release's. Its owner may let it go with the adopt annotation, unless another release holds it.
// Test objects that are release objects stop it too: the tests would overwrite and then delete
// them. It returns the objects to adopt, whose content is recorded before they are applied.
func (r *Reconciler) checkOwnership(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, action string, objs []*unstructured.Unstructured, tests []manifest.Ref) ([]*unstructured.Unstructured, *problem, error) {
	refs := manifest.Inventory(objs)
	if clash := collisions(tests, refs); len(clash) > 0 {
		message := fmt.Sprintf("%s was not started, nothing was applied: test objects are also objects of the release: %s; rename the tests",
			action, manifest.Names(clash, 3))
		return nil, &problem{Reason: ReasonTestCollides, Message: message, Recheck: interval(mr)}, nil
	}
	known := map[string]bool{}
	for _, e := range fromInventory(mr.Status.Inventory) {
		known[e.ID()] = true
	}
	var adopt []*unstructured.Unstructured
	for _, ref := range refs {
		if known[ref.ID()] {
			continue
		}
		live, err := as.Applier.Get(ctx, ref)
		if err != nil {
			return nil, nil, err
		}
		if live == nil {
			continue
		}
		owner, ours := releaseOf(live, mr)
		switch {
		case ours:
			continue
		case owner == "" && live.GetAnnotations()[rollbackv1.AdoptAnnotation] == "true":
			adopt = append(adopt, live)
			continue
		}
		manager := "managed by " + apply.Managers(live)
		hint := fmt.Sprintf("; its owner may let this release take it over with kubectl annotate the object %s=true", rollbackv1.AdoptAnnotation)
		if owner != "" {
			manager, hint = "held by ManifestRelease "+owner, "; two releases cannot hold one object"
		}
		message := fmt.Sprintf("%s was not started, nothing was applied: %s exists and is not this release's (%s)%s", action, ref, manager, hint)
		return nil, &problem{Reason: ReasonNotOwned, Message: message, Backoff: true}, nil
	}
	return adopt, nil, nil
}

// releaseOf reads the release labels of live: the other release that holds it ("ns/name"), or
// ours when it is mr's.
func releaseOf(live *unstructured.Unstructured, mr *rollbackv1.ManifestRelease) (owner string, ours bool) {
	labels := live.GetLabels()
	name, ns := labels[rollbackv1.ReleaseNameLabel], labels[rollbackv1.ReleaseNamespaceLabel]
	if name == "" {
		return "", false
	}
	if name == mr.Name && ns == mr.Namespace {
		return "", true
	}
	return ns + "/" + name, false
}

func collisions(a, b []manifest.Ref) []manifest.Ref {
	in := map[string]bool{}
	for _, r := range b {
		in[r.ID()] = true
	}
	var out []manifest.Ref
	for _, r := range a {
		if in[r.ID()] {
			out = append(out, r)
		}
	}
	return out
}

// checkCRDs finds what in the plan would lose data: CRDs removed or changed while objects of
// theirs remain.
func (r *Reconciler) checkCRDs(ctx context.Context, as *identity, action string, objs []*unstructured.Unstructured, stale []manifest.Ref) (*problem, error) {
	live, err := as.Applier.CRDStates(ctx, manifest.CRDsToInspect(objs, stale), stale)
	if err != nil {
		return nil, err
	}
	blockers := manifest.CheckCRDs(action, objs, stale, live)
	if len(blockers) == 0 {
		return nil, nil
	}
	b := &problem{Reason: blockers[0].Reason, Message: blockers[0].Message, Recheck: r.StalledRecheck}
	if len(blockers) > 1 {
		b.Message += " (and " + strconv.Itoa(len(blockers)-1) + " more CRD problems, see Events)"
		for _, more := range blockers[1:] {
			b.More = append(b.More, warning(more.Reason, more.Message))
		}
	}
	return b, nil
}

// checkDeletion finds a right the identity lacks to delete the objects of a deleted release,
// before any is deleted.
func (r *Reconciler) checkDeletion(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease) (*problem, error) {
	err := as.Applier.Check(ctx, as.Reviewer, plan{stale: fromInventory(mr.Status.Inventory)}.needs(mr), nil)
	var denied *apply.DeniedError
	if errors.As(err, &denied) || apierrors.IsForbidden(err) {
		return &problem{Reason: ReasonForbidden, Message: err.Error(), Backoff: true}, nil
	}
	return nil, err
}

// keptNumbers lists the snapshots of the history that still exist, for messages.
func (r *Reconciler) keptNumbers(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease) string {
	var kept []string
	for _, n := range knownNumbers(mr.Status) {
		if _, err := as.Snapshots.Head(ctx, mr.Namespace, mr.Name, n); err == nil {
			kept = append(kept, strconv.FormatInt(n, 10))
		}
	}
	if len(kept) == 0 {
		return "none"
	}
	return strings.Join(kept, ", ")
}

// plannedTests are the test objects an upgrade will create, for the access check; definitions
// that cannot be read are left to the tests, which fail on them.
func (r *Reconciler) plannedTests(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease) []manifest.Ref {
	if t := mr.Spec.Test; t == nil || !t.Enable {
		return nil
	}
	objs, err := testObjects(ctx, as.Kube, as.Applier.Mapper, mr)
	if err != nil {
		return nil
	}
	return manifest.Inventory(objs)
}
