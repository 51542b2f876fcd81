package holding

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/text"
)

// revision reads, live, the revision a target would apply once released: its Flux source's
// artifact revision (see SourceOf). The target follows that source from then on, so a new
// revision brings it back to be held or released. unknown says why there is no revision, which
// holds the target; err is for a read that may succeed when retried.
func (r *Reconciler) revision(ctx context.Context, w *Watched, m metav1.Object, key string) (revision, unknown string, err error) {
	obj, err := r.Dynamic.Resource(w.GVR).Namespace(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	if err != nil {
		r.Followers.Unfollow(key)
		return "", "", fmt.Errorf("read %s for its source: %w", key, err)
	}
	src, err := SourceOf(w.GroupResource(), obj)
	if err != nil {
		r.Followers.Unfollow(key)
		return "", err.Error(), nil
	}
	r.Followers.Follow(key, src.Key())
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
	revision, err = ArtifactRevision(u)
	if err != nil {
		return "", err.Error(), nil
	}
	return text.TruncateBytes(revision, maxRevision), "", nil
}

// maxRevision bounds a revision copied into a hold's reason.
const maxRevision = 512
