package manifestrelease

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// applyStep carries out one step: its status write, its announcements once the write landed, then
// its act. It returns the release as stored and what the act found, for the next decision.
func (r *Reconciler) applyStep(ctx context.Context, as *identity, s step) (result, error) {
	res := result{Release: s.Release}
	if s.Status != nil {
		stored, wrote, err := r.writeStatus(ctx, s.Release, s.Status)
		if err != nil {
			return res, err
		}
		res.Release = stored
		if wrote {
			r.announce(stored, s)
		}
	}
	// A release let go says what became of its objects once the finalizer is gone.
	_, lettingGo := s.Act.(removeFinalizer)
	if s.Status == nil && !lettingGo {
		r.announce(s.Release, s)
	}
	r.watchSource(as, res.Release, s.Watch)
	if s.Act == nil {
		return res, nil
	}
	var err error
	if res.Found, err = s.Act.do(ctx, r, as, res.Release); err == nil && lettingGo {
		r.announce(res.Release, s)
	}
	return res, err
}

// addFinalizer holds the release for its deletion, with the controller's own rights.
func (addFinalizer) do(ctx context.Context, r *Reconciler, _ *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	_, err := r.patchFinalizers(ctx, mr, append(slices.Clone(mr.Finalizers), rollbackv1.ManifestReleaseFinalizer))
	return findings{}, err
}

// removeFinalizer lets a deleted release go; a release already gone is let go too.
func (removeFinalizer) do(ctx context.Context, r *Reconciler, _ *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	finalizers := slices.DeleteFunc(slices.Clone(mr.Finalizers), func(f string) bool { return f == rollbackv1.ManifestReleaseFinalizer })
	if _, err := r.patchFinalizers(ctx, mr, finalizers); err != nil && !apierrors.IsNotFound(err) {
		return findings{}, err
	}
	return findings{}, nil
}

// pruneAll deletes the objects of a deleted release (its inventory); those no longer labelled as
// its own are left, and said so.
func (a pruneAll) do(ctx context.Context, _ *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	d := &deleted{}
	var err error
	d.Deleted, err = as.Applier.Delete(ctx, manifest.Stale(a.Inventory, nil), ownerLabels(mr, false))
	d.Left, d.Err = notOwned(err)
	return findings{Deleted: d}, nil
}

// correctDrift applies the deployed version again; a refusal by the API server is a finding.
func (a correctDrift) do(ctx context.Context, _ *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	err := as.Applier.Apply(ctx, a.Objects, ownerLabels(mr, false))
	if err == nil || refusedByServer(err) {
		return findings{Drift: &drift{Err: err}}, nil
	}
	return findings{}, err
}

// saveSnapshot saves the snapshot of the version to upgrade to, and records the content of each
// object about to be taken over (Adopt) on the object itself. A snapshot too large or a name
// taken is a finding; other errors are returned.
func (a saveSnapshot) do(ctx context.Context, _ *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	info, err := writeSnapshot(ctx, as, mr, a.Number, a.Fetched)
	var tooLarge *snapshot.TooLargeError
	if errors.As(err, &tooLarge) || errors.Is(err, snapshot.ErrNotOwned) {
		return findings{Saved: &saved{Err: err}}, nil
	}
	if err != nil {
		return findings{}, err
	}
	for _, live := range a.Adopt {
		if err := as.Applier.RecordPrevious(ctx, live); err != nil {
			return findings{}, err
		}
	}
	return findings{Saved: &saved{Info: info}}, nil
}

// writeSnapshot writes the snapshot. A head already there under that number holds other
// manifests from an attempt a crash kept out of the status: nothing refers to it, so it goes.
func writeSnapshot(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, number int64, fetched Fetched) (snapshot.Info, error) {
	meta := snapshot.Meta{Namespace: mr.Namespace, Release: mr.Name, Number: number, Owner: ownerReference(mr),
		Annotations: map[string]string{rollbackv1.VersionAnnotation: fetched.Version, rollbackv1.RevisionAnnotation: fetched.Revision}}
	info, err := as.Snapshots.Save(ctx, meta, fetched.Files)
	if errors.Is(err, snapshot.ErrNumberTaken) {
		if err := as.Snapshots.Delete(ctx, mr.Namespace, mr.Name, number); err != nil {
			return snapshot.Info{}, err
		}
		info, err = as.Snapshots.Save(ctx, meta, fetched.Files)
	}
	return info, err
}

// watchSource watches for the missing source ConfigMap of mr, as the identity mr acts as, or
// ends that watch once the source is read or fails otherwise.
func (r *Reconciler) watchSource(as *identity, mr *rollbackv1.ManifestRelease, w watchOrder) {
	key := mr.Namespace + "/" + mr.Name
	switch {
	case w.Await != "":
		r.SourceWatches.Await(key, as.Sources.Kube.CoreV1(), r.Identities.ServiceAccountOf(mr), mr.Namespace, w.Await)
	case w.Forget:
		r.SourceWatches.Forget(key)
	}
}

// releaseStatus writes ManifestRelease status, which is this controller's alone. A reconcile
// writes it step by step (the operation recorded, then its result), each from the release the
// write before stored; on a conflict (someone editing the spec or metadata meanwhile) a step's
// change is applied again to the live release, so no step is lost to another.
var releaseStatus = reconcile.StatusWriter[*rollbackv1.ManifestRelease, rollbackv1.ManifestReleaseStatus]{
	Kind: "ManifestRelease", FieldManager: FieldManager,
	Status: func(mr *rollbackv1.ManifestRelease) *rollbackv1.ManifestReleaseStatus { return &mr.Status },
}

// writeStatus is the one place the status is written: it applies change (with the generation it
// observes), cuts its messages to fit, writes it unless nothing changed, and returns the release
// as stored and whether it wrote.
func (r *Reconciler) writeStatus(ctx context.Context, mr *rollbackv1.ManifestRelease, change statusChange) (*rollbackv1.ManifestRelease, bool, error) {
	return releaseStatus.Change(ctx, r.Client.RollbackV1alpha1().ManifestReleases(mr.Namespace), mr, func(next *rollbackv1.ManifestRelease) {
		st := &next.Status
		change(st, next.Generation)
		st.ObservedGeneration = next.Generation
		for i := range st.Conditions {
			st.Conditions[i].Message = conditionMessage(st.Conditions[i].Message)
		}
		for i := range st.History {
			st.History[i].Message = conditionMessage(st.History[i].Message)
		}
		if st.Operation != nil {
			st.Operation.Reason = conditionMessage(st.Operation.Reason)
		}
	})
}

// announce makes the Events and metrics of a step whose write landed, on the release as stored.
// Each Event is logged too: Normal ones (upgrades, test results, rollbacks) at INFO, Warnings
// (failures) at ERROR, with the release, the version and the snapshot number.
func (r *Reconciler) announce(mr *rollbackv1.ManifestRelease, s step) {
	for _, e := range s.Events {
		e.Message = eventMessage(e.Message)
		r.Recorder.Event(mr, e.Type, e.Reason, e.Message)
		if e.Type == corev1.EventTypeWarning {
			r.logger().Error(e.Message, logAttrs(mr, "reason", e.Reason)...)
		} else {
			r.logger().Info(e.Message, logAttrs(mr, "reason", e.Reason)...)
		}
	}
	for _, c := range s.Counts {
		r.Metrics.count(mr, c)
	}
	if info := s.Snapshot; info != nil {
		r.Metrics.SnapshotBytes.WithLabelValues(mr.Namespace, mr.Name, "compressed").Set(float64(info.CompressedSize))
		r.Metrics.SnapshotBytes.WithLabelValues(mr.Namespace, mr.Name, "uncompressed").Set(float64(info.Size))
		r.Metrics.SnapshotSecrets.WithLabelValues(mr.Namespace, mr.Name).Set(float64(info.Chunks))
	}
}

// count increments the counter c names for mr.
func (m *Metrics) count(mr *rollbackv1.ManifestRelease, c count) {
	vec := map[string]*prometheus.CounterVec{"upgrades": m.Upgrades, "tests": m.Tests, "rollbacks": m.Rollbacks}[c.Metric]
	if vec != nil {
		vec.WithLabelValues(mr.Namespace, mr.Name, c.Value).Inc()
	}
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
