package holding

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/fluxsource"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/text"
)

// revision reads, live, the revision a target would apply once released: its Flux source's
// artifact revision (see SourceOf). The target follows that source from then on, so a new
// revision brings it back to be held or released. unknown says why there is no revision, which
// holds the target; err is for a read that may succeed when retried.
func (r *Reconciler) revision(ctx context.Context, w *Watched, m metav1.Object, key string, refs []gate.Ref) (revision, unknown string, err error) {
	obj, err := r.Dynamic.Resource(w.GVR).Namespace(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	if err != nil {
		r.Followers.Unfollow(key)
		return "", "", fmt.Errorf("read %s for its source: %w", key, err)
	}
	src, err := fluxsource.Of(w.GroupResource(), obj)
	if err != nil {
		r.Followers.Unfollow(key)
		return "", err.Error(), nil
	}
	r.Followers.Follow(key, followKey(src))
	watched, ok := r.Registry.Get(src.GroupResource)
	if !ok {
		return "", fmt.Sprintf("its source is a %s, a kind the gate-controller does not watch: add %s to --targets", src.GroupResource, src.GroupResource), nil
	}
	u, err := r.Dynamic.Resource(watched.GVR).Namespace(src.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Sprintf("its source %s does not exist", src), nil
	case err != nil:
		return "", "", fmt.Errorf("read the source %s of %s: %w", src, key, err)
	}
	if src.GroupResource == gitRepositoryResource {
		if unknown, err := r.pinned(ctx, watched, u, refs); unknown != "" || err != nil {
			return "", unknown, err
		}
	}
	revision, err = fluxsource.ArtifactRevision(u)
	if err != nil {
		return "", err.Error(), nil
	}
	return text.TruncateBytes(revision, maxRevision), "", nil
}

// pinned pins a GitRepository to the commit the target's gates approve, if they approve one on its
// branch, and says why the target must wait while the pin is not yet in effect (see pinFor).
func (r *Reconciler) pinned(ctx context.Context, w *Watched, src *unstructured.Unstructured, refs []gate.Ref) (unknown string, err error) {
	sha, ok := pinFor(refs, r.lookup, sourceRefs(src), r.now())
	if !ok {
		return "", nil
	}
	inEffect, why := pinState(src, sha)
	if inEffect {
		return "", nil
	}
	commit, _, _ := unstructured.NestedString(src.Object, "spec", "ref", "commit")
	if !strings.EqualFold(commit, sha) || !ownsPin(src) {
		if err := r.applyPin(ctx, w, src, sha); err != nil {
			return "", err
		}
	}
	return why, nil
}

// maxRevision bounds a revision copied into a hold's reason.
const maxRevision = 512
