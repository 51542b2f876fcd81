package manifestrelease

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

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
func (r *Reconciler) checkOwnership(ctx context.Context, mr *rollbackv1.ManifestRelease, action string, objs []*unstructured.Unstructured, tests []manifest.Ref) ([]*unstructured.Unstructured, *problem, error) {
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
		live, err := r.Applier.Get(ctx, ref)
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
