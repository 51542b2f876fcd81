package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// upgrade starts an upgrade to fetched: it checks the plan, saves the snapshot, records the
// operation in the status (the intent a restart resumes from), then runs it.
func (r *Reconciler) upgrade(ctx context.Context, mr *rollbackv1.ManifestRelease, fetched Fetched, digest string) (controller.Result, error) {
	interval := durationOr(mr.Spec.Interval, 5*time.Minute)
	attempt := func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.LastAttemptedVersion, st.LastAttemptedDigest, st.LastAttemptedRevision = fetched.Version, digest, fetched.Revision
		st.LastAttemptedGeneration = gen
	}
	objs, err := r.prepare(mr, fetched.Files)
	if err != nil {
		return r.refuse(ctx, mr, attempt, ReasonInvalidManifests, fmt.Sprintf("%s cannot be applied: %v", fetched.Version, err), interval)
	}
	refs := manifest.Inventory(objs)
	previous := fromInventory(mr.Status.Inventory)
	var stale []manifest.Ref
	if pruneEnabled(mr) {
		stale = manifest.Stale(previous, refs)
	}
	number := r.nextNumber(mr)
	action, tests := "the upgrade to "+fetched.Version, r.plannedTests(ctx, mr)
	if res, blocked, err := r.checkAccess(ctx, mr, action, plan{apply: objs, stale: stale, tests: tests, snapshot: number}); blocked || err != nil {
		return res, err
	}
	adopt, res, blocked, err := r.checkOwnership(ctx, mr, action, objs, tests)
	if blocked || err != nil {
		return res, err
	}
	if res, blocked, err := r.checkCRDs(ctx, mr, "the upgrade to "+fetched.Version, objs, stale); blocked || err != nil {
		return res, err
	}
	info, err := r.saveSnapshot(ctx, mr, number, fetched)
	var tooLarge *snapshot.TooLargeError
	if errors.As(err, &tooLarge) {
		return r.refuse(ctx, mr, attempt, ReasonSnapshotTooLarge, err.Error(), interval)
	}
	if errors.Is(err, snapshot.ErrNotOwned) {
		message := fmt.Sprintf("the upgrade to %s was not started: snapshot %d cannot be written, its name is taken by a Secret this release did not write (%v); delete or rename it",
			fetched.Version, number, err)
		return r.stall(ctx, mr, ReasonSnapshotNameTaken, message, retryDelay(mr, ReasonSnapshotNameTaken, r.Clock.Now()))
	}
	if err != nil {
		return controller.Result{}, err
	}
	if err := r.recordAdopted(ctx, adopt); err != nil {
		return controller.Result{}, err
	}
	r.Metrics.SnapshotBytes.WithLabelValues(mr.Namespace, mr.Name, "compressed").Set(float64(info.CompressedSize))
	r.Metrics.SnapshotBytes.WithLabelValues(mr.Namespace, mr.Name, "uncompressed").Set(float64(info.Size))
	r.Metrics.SnapshotSecrets.WithLabelValues(mr.Namespace, mr.Name).Set(float64(info.Chunks))

	op := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionUpgrade, Number: number, Version: fetched.Version, Digest: digest,
		Revision: fetched.Revision, From: mr.Status.UpgradeNumber, StartTime: metav1.NewTime(r.Clock.Now())}
	message := fmt.Sprintf("upgrading to %s", describe(op.Version, number))
	if op.From > 0 {
		message += " from " + describe(mr.Status.DeployedVersion, op.From)
	}
	mr, err = r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		attempt(st, gen)
		st.LastAttemptFailed = false
		st.Operation = op
		st.Snapshots = linkSnapshot(st.Snapshots, number, digest, knownNumbers(mr, number))
		st.Inventory = toInventory(union(previous, refs))
		conditions.MarkReconciling(&st.Conditions, gen, ReasonUpgrading, message)
	}, r.event(corev1.EventTypeNormal, ReasonUpgradeStarted, message))
	if err != nil {
		return controller.Result{}, err
	}
	return r.runUpgrade(ctx, mr, objs)
}

// refuse holds a version that cannot be applied as it is, until its source changes.
func (r *Reconciler) refuse(ctx context.Context, mr *rollbackv1.ManifestRelease, attempt func(*rollbackv1.ManifestReleaseStatus, int64), reason, message string, interval time.Duration) (controller.Result, error) {
	message = conditionMessage(message)
	if _, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		attempt(st, gen)
		st.LastAttemptFailed = true
		conditions.MarkStalled(&st.Conditions, gen, reason, message)
	}, r.event(corev1.EventTypeWarning, reason, message)); err != nil {
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: interval}, nil
}

// runUpgrade applies the operation's objects, waits for them, runs the tests, and then either
// finishes the upgrade or rolls back. Errors that say nothing about the version (the API server
// unreachable) are returned: the operation stays recorded and is resumed.
func (r *Reconciler) runUpgrade(ctx context.Context, mr *rollbackv1.ManifestRelease, objs []*unstructured.Unstructured) (controller.Result, error) {
	failure, err := r.applyAndWait(ctx, mr, objs)
	if err != nil {
		return controller.Result{}, err
	}
	result, testMessage := rollbackv1.TestNotRun, ""
	if failure == nil {
		if result, testMessage, err = r.runTests(ctx, mr); err != nil {
			return controller.Result{}, err
		}
		r.countTests(mr, result)
		if result == rollbackv1.TestFailed && !mr.Spec.Test.IgnoreFailures {
			failure = &failed{Reason: ReasonTestFailed, Message: testMessage}
		}
	}
	if failure != nil {
		return r.upgradeFailed(ctx, mr, failure, result)
	}
	return r.finishUpgrade(ctx, mr, manifest.Inventory(objs), result, testMessage)
}

// failed is why a version did not make it.
type failed struct {
	Reason  string
	Message string
}

// applyAndWait applies objs and waits for their health. A refusal by the API server or an
// unhealthy object is a failed; other errors are returned.
func (r *Reconciler) applyAndWait(ctx context.Context, mr *rollbackv1.ManifestRelease, objs []*unstructured.Unstructured) (*failed, error) {
	labels := ownerLabels(mr, false)
	if err := r.Applier.Apply(ctx, objs, labels); err != nil {
		if refusedByServer(err) {
			return &failed{Reason: ReasonApplyFailed, Message: "apply: " + err.Error()}, nil
		}
		return nil, err
	}
	err := r.Applier.Wait(ctx, manifest.Inventory(objs), labels, durationOr(mr.Spec.Timeout, 5*time.Minute), nil)
	if unhealthy(err) {
		return &failed{Reason: ReasonHealthCheckFailed, Message: "health: " + err.Error()}, nil
	}
	return nil, err
}

func (r *Reconciler) finishUpgrade(ctx context.Context, mr *rollbackv1.ManifestRelease, refs []manifest.Ref, result rollbackv1.TestResult, testMessage string) (controller.Result, error) {
	op := *mr.Status.Operation
	kept, pruneMessage, err := r.prune(ctx, mr, op.Version, manifest.Stale(fromInventory(mr.Status.Inventory), refs))
	if err != nil {
		return controller.Result{}, err
	}
	message := describe(op.Version, op.Number) + " is deployed"
	if result == rollbackv1.TestPassed {
		message += "; " + testMessage
	}
	if result == rollbackv1.TestFailed {
		message += "; its tests failed, which spec.test.ignoreFailures allows: " + testMessage
	}
	message += pruneMessage
	// Before the status says the upgrade is done, so that whoever sees it done sees the history
	// pruned too; op.From stays in case a crash here sends the upgrade back to a rollback.
	keptNumbers, foreign, err := r.pruneSnapshots(ctx, mr, op.Number, op.From)
	if err != nil {
		return controller.Result{}, err
	}
	mr, err = r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.Operation = nil
		st.Snapshots = keepLinks(st.Snapshots, keptNumbers)
		conditions.Remove(&st.Conditions, rollbackv1.ConditionSnapshotsVerified)
		if foreign != nil {
			markNotInChain(st, gen, "pruning the snapshots: "+foreign.Error())
		}
		st.UpgradeNumber, st.DeployedVersion, st.DeployedDigest = op.Number, op.Version, op.Digest
		st.Inventory = toInventory(append(slices.Clone(refs), kept...))
		st.LastAttemptFailed = false
		addHistory(st, rollbackv1.ReleaseHistoryEntry{Number: op.Number, Action: op.Action, Version: op.Version, Digest: op.Digest,
			Revision: op.Revision, Time: metav1.NewTime(r.Clock.Now()), Test: result})
		setTestCondition(st, gen, result, testMessage)
		if conditions.Get(st.Conditions, rollbackv1.ConditionRolledBack) != nil {
			conditions.Set(&st.Conditions, gen, rollbackv1.ConditionRolledBack, metav1.ConditionFalse, ReasonUpgradeSucceeded, message)
		}
		conditions.MarkReady(&st.Conditions, gen, ReasonUpgradeSucceeded, conditionMessage(message))
	}, r.event(corev1.EventTypeNormal, ReasonUpgradeSucceeded, eventMessage(message)), r.countUpgrade("succeeded"))
	if err != nil {
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: durationOr(mr.Spec.Interval, 5*time.Minute)}, nil
}

// prune deletes what the new version dropped, keeping CRDs that still have objects. It returns
// the objects it kept, to stay in the inventory.
func (r *Reconciler) prune(ctx context.Context, mr *rollbackv1.ManifestRelease, version string, stale []manifest.Ref) ([]manifest.Ref, string, error) {
	if !pruneEnabled(mr) || len(stale) == 0 {
		return nil, "", nil
	}
	live, err := r.Applier.CRDStates(ctx, manifest.CRDsToInspect(nil, stale), stale)
	if err != nil {
		return nil, "", err
	}
	var kept, deletable []manifest.Ref
	blocked := map[string]bool{}
	for _, b := range manifest.CheckCRDs("pruning after the upgrade to "+version, nil, stale, live) {
		blocked[b.Object.ID()] = true
		r.Recorder.Event(mr, corev1.EventTypeWarning, b.Reason, eventMessage(b.Message))
	}
	for _, ref := range stale {
		if blocked[ref.ID()] {
			kept = append(kept, ref)
		} else {
			deletable = append(deletable, ref)
		}
	}
	deleted, err := r.Applier.Delete(ctx, deletable, ownerLabels(mr, false))
	message := ""
	if len(deleted) > 0 {
		message = fmt.Sprintf("; pruned %d objects", len(deleted))
	}
	if err != nil {
		r.Recorder.Event(mr, corev1.EventTypeWarning, ReasonPruneFailed, eventMessage(err.Error()))
		kept = append(kept, notIn(deletable, deleted)...)
	}
	if len(kept) > 0 {
		message += fmt.Sprintf("; kept %d objects it no longer has (see Events): %s", len(kept), manifest.Names(kept, 3))
	}
	return kept, message, nil
}

// saveSnapshot writes the snapshot. A head already there under that number holds other
// manifests from an attempt a crash kept out of the status: nothing refers to it, so it goes.
func (r *Reconciler) saveSnapshot(ctx context.Context, mr *rollbackv1.ManifestRelease, number int64, fetched Fetched) (snapshot.Info, error) {
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
	known := knownNumbers(mr, always...)
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

// knownNumbers is every snapshot number the status names, and more, sorted.
func knownNumbers(mr *rollbackv1.ManifestRelease, more ...int64) []int64 {
	numbers := slices.Clone(more)
	numbers = append(numbers, mr.Status.UpgradeNumber)
	for _, h := range mr.Status.History {
		numbers = append(numbers, h.Number)
	}
	if op := mr.Status.Operation; op != nil {
		numbers = append(numbers, op.Number, op.From)
	}
	slices.Sort(numbers)
	numbers = slices.Compact(numbers)
	return slices.DeleteFunc(numbers, func(n int64) bool { return n < 1 })
}

// nextNumber is one more than any number the release used. A number a crash kept out of the
// status may be used again: saveSnapshot replaces what it holds.
func (r *Reconciler) nextNumber(mr *rollbackv1.ManifestRelease) int64 {
	known := knownNumbers(mr)
	if len(known) == 0 {
		return 1
	}
	return known[len(known)-1] + 1
}

// checkCRDs stalls the release when the plan would lose data. blocked says so.
func (r *Reconciler) checkCRDs(ctx context.Context, mr *rollbackv1.ManifestRelease, action string, objs []*unstructured.Unstructured, stale []manifest.Ref) (controller.Result, bool, error) {
	live, err := r.Applier.CRDStates(ctx, manifest.CRDsToInspect(objs, stale), stale)
	if err != nil {
		return controller.Result{}, false, err
	}
	blockers := manifest.CheckCRDs(action, objs, stale, live)
	if len(blockers) == 0 {
		return controller.Result{}, false, nil
	}
	message := blockers[0].Message
	if len(blockers) > 1 {
		message += " (and " + strconv.Itoa(len(blockers)-1) + " more CRD problems, see Events)"
		for _, b := range blockers[1:] {
			r.Recorder.Event(mr, corev1.EventTypeWarning, b.Reason, eventMessage(b.Message))
		}
	}
	res, err := r.stall(ctx, mr, blockers[0].Reason, message, r.StalledRecheck)
	return res, true, err
}

// countUpgrade counts a finished upgrade of the release as stored.
func (r *Reconciler) countUpgrade(result string) func(*rollbackv1.ManifestRelease) {
	return func(mr *rollbackv1.ManifestRelease) {
		r.Metrics.Upgrades.WithLabelValues(mr.Namespace, mr.Name, result).Inc()
	}
}

func (r *Reconciler) countTests(mr *rollbackv1.ManifestRelease, result rollbackv1.TestResult) {
	switch result {
	case rollbackv1.TestPassed:
		r.Metrics.Tests.WithLabelValues(mr.Namespace, mr.Name, "passed").Inc()
	case rollbackv1.TestFailed:
		r.Metrics.Tests.WithLabelValues(mr.Namespace, mr.Name, "failed").Inc()
	}
}

func pruneEnabled(mr *rollbackv1.ManifestRelease) bool {
	return mr.Spec.Prune == nil || *mr.Spec.Prune
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
