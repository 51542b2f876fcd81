package holding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/fluxsource"
	"github.com/sluicehq/sluice/pkg/gate"
)

// PinFieldManager owns spec.ref.commit of a GitRepository the gate-controller pins to an approved
// commit. It is not the hold's field manager, so a source that is a target of its own keeps its
// hold and its pin apart.
const PinFieldManager = "gate-controller-pin"

// kustomizationResource is the one target kind whose source can be a GitRepository.
var kustomizationResource = schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}

// gitRepositoryResource is the resource of the one source kind that can be pinned to a commit.
var gitRepositoryResource = schema.GroupResource{Group: fluxsource.Group, Resource: "gitrepositories"}

// A Kustomization applies whatever artifact its source has, the moment the source has it: a
// target released because its source is at an approved revision would apply the next, unapproved
// one as soon as the source fetched it, before any hold could land. So while a closed gate
// approves Git commits, the target's GitRepository is pinned to the approved commit
// (spec.ref.commit, which Flux checks out instead of the branch head) and the target is released
// only once source-controller has fetched the pinned spec: from then on the source cannot move
// to anything unapproved. The pin is removed once no gate asks for it, after the hold it leaves
// behind has landed.

// pinFor is the commit a GitRepository should be pinned to for the target's gates: the most
// recent approval, of a closed gate the target references, that names a whole Git commit of one
// of the source's refs (see sourceRefs) or of no ref. ok is false when no approval names one.
func pinFor(refs []gate.Ref, lookup func(ns, name string) (*gatingv1alpha1.Gate, error), sourceRefs []string, now time.Time) (sha string, ok bool) {
	var newest time.Time
	for _, ref := range refs {
		g, err := lookup(ref.Namespace, ref.Name)
		if err != nil || g == nil || g.Status.Open || g.Status.ObservedGeneration != g.Generation {
			continue
		}
		for _, a := range g.Status.Approvals {
			if a.Until != nil && !now.Before(a.Until.Time) {
				continue
			}
			commit, ofSource := approvedCommit(a.Revision, sourceRefs)
			if !ofSource {
				continue
			}
			at := time.Time{}
			if a.At != nil {
				at = a.At.Time
			}
			// Later entries win a tie: status.approvals keeps the order they were added in.
			if !ok || !at.Before(newest) {
				sha, newest, ok = commit, at, true
			}
		}
	}
	return sha, ok
}

// sourceRefs are the names Flux writes before "@" in a GitRepository's revisions: its branch, tag
// or full ref name, or master when it names none (Flux's default).
func sourceRefs(src *unstructured.Unstructured) []string {
	ref, found, _ := unstructured.NestedStringMap(src.Object, "spec", "ref")
	if !found {
		return []string{"master"}
	}
	var names []string
	for _, field := range []string{"branch", "tag", "name"} {
		if ref[field] != "" {
			names = append(names, ref[field])
		}
	}
	return names
}

// approvedCommit reads the Git commit a revision names: "<ref>@sha1:<sha>" (or sha256) where ref
// is one of refs, or a bare full SHA. A revision of another ref, a digest of an OCI artifact, or a
// chart version names none.
func approvedCommit(revision string, refs []string) (string, bool) {
	ref, digest, hasRef := strings.Cut(revision, "@")
	if !hasRef {
		digest = revision
	} else if !slices.Contains(refs, ref) {
		return "", false
	}
	if algo, hex, ok := strings.Cut(digest, ":"); ok {
		if !hasRef || !slices.Contains([]string{"sha1", "sha256"}, strings.ToLower(algo)) {
			return "", false
		}
		digest = hex
	}
	if (len(digest) == 40 || len(digest) == 64) && isHexString(digest) {
		return strings.ToLower(digest), true
	}
	return "", false
}

func isHexString(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// pinState says whether a GitRepository already serves the pinned commit: the pin is in its spec,
// owned by the controller, and source-controller has reconciled that spec, so its artifact can
// only be that commit. It returns why not, for the hold's reason.
func pinState(src *unstructured.Unstructured, sha string) (pinned bool, why string) {
	commit, _, _ := unstructured.NestedString(src.Object, "spec", "ref", "commit")
	if !strings.EqualFold(commit, sha) || !ownsPin(src) {
		return false, fmt.Sprintf("its source %s/%s is being pinned to the approved commit %s", src.GetNamespace(), src.GetName(), sha[:12])
	}
	observed, _, _ := unstructured.NestedInt64(src.Object, "status", "observedGeneration")
	if observed != src.GetGeneration() {
		return false, fmt.Sprintf("its source %s/%s is pinned to the approved commit %s; waiting for source-controller to fetch it", src.GetNamespace(), src.GetName(), sha[:12])
	}
	return true, ""
}

// ownsPin reports whether the controller's pin manager owns a field of obj.
func ownsPin(obj metav1.Object) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == PinFieldManager && f.Operation == metav1.ManagedFieldsOperationApply
	})
}

// pinObject is the apply configuration of the pin: spec.ref.commit alone, or nothing (which gives
// the field up: the API server removes it unless someone else set it too).
func pinObject(src *unstructured.Unstructured, sha string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(src.GetAPIVersion())
	u.SetKind(src.GetKind())
	u.SetNamespace(src.GetNamespace())
	u.SetName(src.GetName())
	u.SetUID(src.GetUID())
	if sha != "" {
		u.Object["spec"] = map[string]any{"ref": map[string]any{"commit": sha}}
	}
	return u
}

// applyPin writes (or, with sha empty, removes) the pin on a source.
func (r *Reconciler) applyPin(ctx context.Context, w *Watched, src *unstructured.Unstructured, sha string) error {
	_, err := r.Dynamic.Resource(w.GVR).Namespace(src.GetNamespace()).Apply(ctx, src.GetName(), pinObject(src, sha),
		metav1.ApplyOptions{FieldManager: PinFieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("pin %s %s/%s to %q: %w", src.GetKind(), src.GetNamespace(), src.GetName(), sha, err)
	}
	if r.Log != nil {
		if sha == "" {
			r.Log.Info("unpinned source", "source", src.GetNamespace()+"/"+src.GetName())
		} else {
			r.Log.Info("pinned source to the approved commit", "source", src.GetNamespace()+"/"+src.GetName(), "commit", sha)
		}
	}
	return nil
}

// unpinSource removes the pin from the source the target was pinned through, if any: the one it
// follows, or, the first time a target is seen by this process (a restart forgets), the source
// its spec names. It is called once the target's hold, if any, has landed.
func (r *Reconciler) unpinSource(ctx context.Context, w *Watched, m metav1.Object, key string) error {
	if w.GroupResource() != kustomizationResource {
		return nil // only a Kustomization applies a GitRepository directly
	}
	_, checked := r.pinChecked.LoadOrStore(key, true)
	if checked && !r.Followers.Follows(key) {
		return nil
	}
	obj, err := r.Dynamic.Resource(w.GVR).Namespace(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.Followers.Unfollow(key)
		return nil
	}
	if err != nil {
		r.pinChecked.Delete(key)
		return fmt.Errorf("read %s for the source it may have pinned: %w", key, err)
	}
	ref, err := fluxsource.Of(w.GroupResource(), obj)
	watched, ok := r.Registry.Get(ref.GroupResource)
	if err != nil || ref.GroupResource != gitRepositoryResource || !ok {
		r.Followers.Unfollow(key)
		return nil
	}
	src, err := r.Dynamic.Resource(watched.GVR).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		r.pinChecked.Delete(key)
		return fmt.Errorf("read the source %s of %s: %w", ref, key, err)
	}
	if err == nil && ownsPin(src) {
		if err := r.applyPin(ctx, watched, src, ""); err != nil {
			r.pinChecked.Delete(key)
			return err
		}
	}
	r.Followers.Unfollow(key)
	return nil
}

// unpinDeleted removes the pin from the source a deleted target followed: nothing else would.
func (r *Reconciler) unpinDeleted(ctx context.Context, key string) error {
	r.pinChecked.Delete(key)
	sourceKey, ok := r.Followers.Source(key)
	if !ok {
		return nil
	}
	gr, nsName, _ := SplitKey(sourceKey)
	ns, name, _ := strings.Cut(nsName, "/")
	watched, known := r.Registry.Get(gr)
	if gr != gitRepositoryResource || !known {
		r.Followers.Unfollow(key)
		return nil
	}
	src, err := r.Dynamic.Resource(watched.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read the source %s of the deleted %s: %w", sourceKey, key, err)
	}
	if err == nil && ownsPin(src) {
		if err := r.applyPin(ctx, watched, src, ""); err != nil {
			return err
		}
	}
	r.Followers.Unfollow(key)
	return nil
}
