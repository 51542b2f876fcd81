package manifestrelease

import (
	"context"
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// found is what the acts of one reconcile found, each set once by its act.
type found struct {
	// Operating is true once a step recorded or resumed the operation the observation carries.
	Operating bool
	// Awaiting is set by the last act, a look at health that found objects not healthy yet and
	// time left: the next look comes after healthPoll.
	Awaiting bool
	Saved    *saved
	Applied  *applied
	Tested   *tested
	Pruned   *pruned
	Rolled   *rolled
	Drift    *drift
	Deleted  *deleted
}

type saved struct {
	Info snapshot.Info
	Err  error
}

// applied is a version applied at At, from which spec.timeout counts; Healthy once every
// object is.
type applied struct {
	Failure *failed
	At      time.Time
	Healthy bool
}

type tested struct {
	Result  rollbackv1.TestResult
	Message string
}

type pruned struct {
	Kept        []manifest.Ref
	Message     string
	KeptNumbers []int64
	Foreign     error
	Events      []event
}

// rolled is a rollback applied at At; Settled once its objects are healthy or the time for
// them ran out, which HealthNote then says.
type rolled struct {
	Refused    error
	At         time.Time
	Settled    bool
	HealthNote string
}

type drift struct{ Err error }

type deleted struct {
	Deleted, Left []manifest.Ref
	Err           error
}

// failed is why a version did not make it.
type failed struct {
	Reason  string
	Message string
}

// apply carries out one step: its status write, its announcements once the write landed, then
// its act, whose findings go into o.Found for the next decision.
func (r *Reconciler) apply(ctx context.Context, o *observation, s step) error {
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
		return r.letGo(ctx, mr, s)
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

// letGo removes the finalizer of a deleted release, then says what became of its objects.
func (r *Reconciler) letGo(ctx context.Context, mr *rollbackv1.ManifestRelease, s step) error {
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
