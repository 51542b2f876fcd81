package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// applyVersion applies objs, at now. A refusal by the API server is a failure of the version;
// other errors are returned.
func (r *Reconciler) applyVersion(ctx context.Context, mr *rollbackv1.ManifestRelease, objs []*unstructured.Unstructured, now time.Time) (*applied, error) {
	if err := r.Applier.Apply(ctx, objs, ownerLabels(mr, false)); err != nil {
		if refusedByServer(err) {
			return &applied{Failure: &failed{Reason: ReasonApplyFailed, Message: "apply: " + err.Error()}}, nil
		}
		return nil, err
	}
	return &applied{At: now}, nil
}

// awaitVersion looks once at the health of the version applied: an object that failed, or
// spec.timeout run out, fails the version.
func (r *Reconciler) awaitVersion(ctx context.Context, o *observation, objs []*unstructured.Unstructured) error {
	a := o.Found.Applied
	done, bad, err := r.awaitHealth(ctx, o, objs, a.At)
	if bad != nil {
		a.Failure = &failed{Reason: ReasonHealthCheckFailed, Message: "health: " + bad.Error()}
	}
	a.Healthy = done && bad == nil
	return err
}

// awaitHealth looks once at the health of objs, applied at since. It is done when every one is
// healthy, or, with the reason as unhealthy, when one failed or spec.timeout ran out; otherwise
// it marks the observation Awaiting, to look again later. Other errors are returned.
func (r *Reconciler) awaitHealth(ctx context.Context, o *observation, objs []*unstructured.Unstructured, since time.Time) (done bool, unhealthy, err error) {
	timeout := durationOr(o.Release.Spec.Timeout, 5*time.Minute)
	pending, err := r.Applier.Pending(ctx, manifest.Inventory(objs), ownerLabels(o.Release, false), nil)
	var bad *apply.FailedError
	switch {
	case errors.As(err, &bad):
		return true, err, nil
	case err != nil:
		return false, nil, err
	case len(pending) == 0:
		return true, nil, nil
	case !o.Now.Before(since.Add(timeout)):
		return true, &apply.TimeoutError{After: timeout, Pending: pending}, nil
	}
	o.Found.Awaiting = true
	return false, nil, nil
}

// prune deletes what the upgraded version dropped, keeping CRDs that still have objects, then
// the snapshots beyond the history limit. It does so before the status says the upgrade is done,
// so that whoever sees it done sees the history pruned too; the operation's From stays in case a
// crash here sends the upgrade back to a rollback.
func (r *Reconciler) prune(ctx context.Context, mr *rollbackv1.ManifestRelease, stale []manifest.Ref) (*pruned, error) {
	op := mr.Status.Operation
	p := &pruned{}
	if pruneEnabled(mr) && len(stale) > 0 {
		if err := r.pruneObjects(ctx, op.Version, stale, ownerLabels(mr, false), p); err != nil {
			return nil, err
		}
	}
	var err error
	p.KeptNumbers, p.Foreign, err = r.pruneSnapshots(ctx, mr, op.Number, op.From)
	return p, err
}

// pruneObjects deletes stale objects, except CRDs that still have objects. What it keeps stays
// in the inventory, and is announced.
func (r *Reconciler) pruneObjects(ctx context.Context, version string, stale []manifest.Ref, labels map[string]string, p *pruned) error {
	live, err := r.Applier.CRDStates(ctx, manifest.CRDsToInspect(nil, stale), stale)
	if err != nil {
		return err
	}
	var deletable []manifest.Ref
	blocked := map[string]bool{}
	for _, b := range manifest.CheckCRDs("pruning after the upgrade to "+version, nil, stale, live) {
		blocked[b.Object.ID()] = true
		p.Events = append(p.Events, warning(b.Reason, b.Message))
	}
	for _, ref := range stale {
		if blocked[ref.ID()] {
			p.Kept = append(p.Kept, ref)
		} else {
			deletable = append(deletable, ref)
		}
	}
	deleted, err := r.Applier.Delete(ctx, deletable, labels)
	if len(deleted) > 0 {
		p.Message = fmt.Sprintf("; pruned %d objects", len(deleted))
	}
	if err != nil {
		p.Events = append(p.Events, warning(ReasonPruneFailed, err.Error()))
		p.Kept = append(p.Kept, notIn(deletable, deleted)...)
	}
	if len(p.Kept) > 0 {
		p.Message += fmt.Sprintf("; kept %d objects it no longer has (see Events): %s", len(p.Kept), manifest.Names(p.Kept, 3))
	}
	return nil
}

// writeSnapshot writes the snapshot. A head already there under that number holds other
// manifests from an attempt a crash kept out of the status: nothing refers to it, so it goes.
func (r *Reconciler) writeSnapshot(ctx context.Context, mr *rollbackv1.ManifestRelease, number int64, fetched Fetched) (snapshot.Info, error) {
	meta := snapshot.Meta{Namespace: mr.Namespace, Release: mr.Name, Number: number, Owner: ownerReference(mr),
		Annotations: map[string]string{rollbackv1.VersionAnnotation: fetched.Version, rollbackv1.RevisionAnnotation: fetched.Revision}}
	info, err := r.Snapshots.Save(ctx, meta, fetched.Files)
	if errors.Is(err, snapshot.ErrNumberTaken) {
		if err := r.Snapshots.Delete(ctx, mr.Namespace, mr.Name, number); err != nil {
			return snapshot.Info{}, err
		}
		info, err = r.Snapshots.Save(ctx, meta, fetched.Files)
	}
	return info, err
}

// pruneSnapshots keeps the newest historyLimit snapshots the history knows, and always those
// named; it deletes the others by name, and returns the numbers kept. A Secret outside the
// digest chain under a number it deletes is left alone, and returned as foreign.
func (r *Reconciler) pruneSnapshots(ctx context.Context, mr *rollbackv1.ManifestRelease, always ...int64) (kept []int64, foreign, err error) {
	limit := 5
	if mr.Spec.HistoryLimit != nil {
		limit = int(*mr.Spec.HistoryLimit)
	}
	known := knownNumbers(mr.Status, always...)
	keep := slices.Clone(always)
	keep = append(keep, known[max(0, len(known)-limit):]...)
	for _, n := range known {
		if slices.Contains(keep, n) {
			continue
		}
		err := r.Snapshots.Delete(ctx, mr.Namespace, mr.Name, n)
		switch {
		case errors.Is(err, snapshot.ErrNotOwned):
			foreign = err
		case err != nil && !errors.Is(err, snapshot.ErrIncomplete):
			return nil, nil, err
		}
	}
	return keep, foreign, nil
}

// checkCRDs finds what in the plan would lose data: CRDs removed or changed while objects of
// theirs remain.
func (r *Reconciler) checkCRDs(ctx context.Context, action string, objs []*unstructured.Unstructured, stale []manifest.Ref) (*problem, error) {
	live, err := r.Applier.CRDStates(ctx, manifest.CRDsToInspect(objs, stale), stale)
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

func ownerReference(mr *rollbackv1.ManifestRelease) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: rollbackv1.SchemeGroupVersion.String(), Kind: "ManifestRelease", Name: mr.Name, UID: mr.UID}
}

func notIn(all, some []manifest.Ref) []manifest.Ref {
	skip := map[string]bool{}
	for _, r := range some {
		skip[r.ID()] = true
	}
	var out []manifest.Ref
	for _, r := range all {
		if !skip[r.ID()] {
			out = append(out, r)
		}
	}
	return out
}
