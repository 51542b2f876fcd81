package manifestrelease

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

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

// carryOut carries out one step: its status write, its announcements once the write landed, then
// its act, whose findings go into o.Found for the next decision.
func (r *Reconciler) carryOut(ctx context.Context, o *observation, s step) error {
	if s.Status != nil {
		stored, wrote, err := r.writeStatus(ctx, o.Release, s.Status)
		if err != nil {
			return err
		}
		o.Release = stored
		if wrote {
			r.announce(stored, s)
		}
	} else if s.Act != actRemoveFinalizer {
		r.announce(o.Release, s)
	}
	r.watchSource(o.Release, s.Watch)
	o.Found.Operating = o.Found.Operating || s.Operating
	o.Found.Awaiting = false
	return r.act(ctx, o, s)
}

// act does what the step does to the cluster, as the identity the release acts as.
func (r *Reconciler) act(ctx context.Context, o *observation, s step) error {
	mr := o.Release
	var err error
	switch s.Act {
	case actAddFinalizer:
		var held *rollbackv1.ManifestRelease
		if held, err = r.patchFinalizers(ctx, mr, append(slices.Clone(mr.Finalizers), rollbackv1.ManifestReleaseFinalizer)); err == nil {
			o.Release = held
		}
	case actRemoveFinalizer:
		return r.removeFinalizer(ctx, mr, s)
	case actPruneAll:
		d := &deleted{}
		d.Deleted, err = r.Applier.Delete(ctx, manifest.Stale(s.Stale, nil), ownerLabels(mr, false))
		d.Left, d.Err = notOwned(err)
		o.Found.Deleted, err = d, nil
	case actCorrectDrift:
		if err = r.Applier.Apply(ctx, s.Objects, ownerLabels(mr, false)); err == nil || refusedByServer(err) {
			o.Found.Drift, err = &drift{Err: err}, nil
		}
	case actSaveSnapshot:
		o.Found.Saved, err = r.saveSnapshot(ctx, mr, s)
	case actApplyVersion:
		o.Found.Applied, err = r.applyVersion(ctx, mr, s.Objects, o.Now)
	case actAwaitVersion:
		err = r.awaitVersion(ctx, o, s.Objects)
	case actTest:
		o.Found.Tested, err = r.runTests(ctx, mr)
	case actPrune:
		o.Found.Pruned, err = r.prune(ctx, mr, s.Stale)
	case actApplyRollback:
		o.Found.Rolled, err = r.applyRollback(ctx, mr, s, o.Now)
	case actAwaitRollback:
		err = r.awaitRollback(ctx, o, s.Objects)
	}
	return err
}

// removeFinalizer removes the finalizer of a deleted release, then says what became of its objects.
func (r *Reconciler) removeFinalizer(ctx context.Context, mr *rollbackv1.ManifestRelease, s step) error {
	finalizers := slices.DeleteFunc(slices.Clone(mr.Finalizers), func(f string) bool { return f == rollbackv1.ManifestReleaseFinalizer })
	if _, err := r.patchFinalizers(ctx, mr, finalizers); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.announce(mr, s)
	return nil
}

// saveSnapshot saves the snapshot of the version to upgrade to, and records the content of each
// object about to be taken over on the object itself. A snapshot too large or a name taken is a
// finding; other errors are returned.
func (r *Reconciler) saveSnapshot(ctx context.Context, mr *rollbackv1.ManifestRelease, s step) (*saved, error) {
	info, err := r.writeSnapshot(ctx, mr, s.Number, s.Fetched)
	var tooLarge *snapshot.TooLargeError
	if errors.As(err, &tooLarge) || errors.Is(err, snapshot.ErrNotOwned) {
		return &saved{Err: err}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, live := range s.Adopt {
		if err := r.Applier.RecordPrevious(ctx, live); err != nil {
			return nil, err
		}
	}
	return &saved{Info: info}, nil
}

// watchSource watches for the missing source ConfigMap of mr, as the identity mr acts as, or
// ends that watch once the source is read or fails otherwise.
func (r *Reconciler) watchSource(mr *rollbackv1.ManifestRelease, w watchOrder) {
	key := mr.Namespace + "/" + mr.Name
	switch {
	case w.Await != "":
		r.SourceWatches.Await(key, r.Sources.Kube.CoreV1(), r.Identities.ServiceAccountOf(mr), mr.Namespace, w.Await)
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
