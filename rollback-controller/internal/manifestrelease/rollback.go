package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/apply"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// upgradeFailed records why the upgrade failed and rolls back to the snapshot deployed before
// it; a first install has none, and stays as it is, held until its source changes.
func (r *Reconciler) upgradeFailed(ctx context.Context, mr *rollbackv1.ManifestRelease, why *failed, result rollbackv1.TestResult) (controller.Result, error) {
	op := *mr.Status.Operation
	entry := rollbackv1.ReleaseHistoryEntry{Number: op.Number, Action: op.Action, Version: op.Version, Digest: op.Digest,
		Revision: op.Revision, Time: metav1.NewTime(r.Clock.Now()), Test: result, Message: conditionMessage(why.Message)}
	if op.From == 0 {
		message := conditionMessage(fmt.Sprintf("%s failed (%s): %s. There is no earlier version to roll back to; it stays applied and is not tried again until the source changes",
			describe(op.Version, op.Number), why.Reason, why.Message))
		_, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
			st.Operation = nil
			st.LastAttemptFailed = true
			addHistory(st, entry)
			setTestCondition(st, gen, result, why.Message)
			conditions.MarkStalled(&st.Conditions, gen, ReasonInstallFailed, message)
		}, r.event(corev1.EventTypeWarning, ReasonInstallFailed, eventMessage(message)), r.countUpgrade("failed"))
		return controller.Result{}, err
	}
	entry.RolledBack = true
	rollback := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionRollback, Number: op.From, Version: mr.Status.DeployedVersion,
		Digest: mr.Status.DeployedDigest, From: op.Number, Reason: conditionMessage(why.Message), StartTime: metav1.NewTime(r.Clock.Now())}
	message := fmt.Sprintf("%s failed (%s), rolling back to %s: %s", describe(op.Version, op.Number), why.Reason,
		describe(rollback.Version, rollback.Number), why.Message)
	mr, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.Operation = rollback
		st.LastAttemptFailed = true
		addHistory(st, entry)
		setTestCondition(st, gen, result, why.Message)
		conditions.MarkReconciling(&st.Conditions, gen, ReasonRollingBack, conditionMessage(message))
	}, r.event(corev1.EventTypeWarning, ReasonUpgradeFailed, eventMessage(message)))
	if err != nil {
		return controller.Result{}, err
	}
	return r.runRollback(ctx, mr)
}

// runRollback applies the snapshot the operation names, deletes what only the version left
// behind had, and waits for health. CRD changes that would lose data stop it, Stalled, with the
// operation kept so that it finishes once a person has acted.
func (r *Reconciler) runRollback(ctx context.Context, mr *rollbackv1.ManifestRelease) (controller.Result, error) {
	op := *mr.Status.Operation
	files, _, err := r.Snapshots.Load(ctx, mr.Namespace, mr.Name, op.Number)
	if errors.Is(err, snapshot.ErrNotFound) || errors.Is(err, snapshot.ErrIncomplete) || errors.Is(err, snapshot.ErrInvalidArchive) || errors.Is(err, snapshot.ErrNotOwned) {
		return r.abandonRollback(ctx, mr, fmt.Sprintf("cannot roll back to snapshot %d: %v", op.Number, err))
	}
	if err != nil {
		return controller.Result{}, err
	}
	objs, err := r.prepare(mr, files)
	if err != nil {
		return r.abandonRollback(ctx, mr, fmt.Sprintf("snapshot %d no longer applies: %v", op.Number, err))
	}
	target := manifest.Inventory(objs)
	current := fromInventory(mr.Status.Inventory)
	stale := manifest.Stale(current, target)
	action := "the rollback to " + describe(op.Version, op.Number)
	if res, blocked, err := r.checkAccess(ctx, mr, action, plan{apply: objs, stale: stale}); blocked || err != nil {
		return res, err
	}
	if res, blocked, err := r.checkCRDs(ctx, mr, action, objs, stale); blocked || err != nil {
		return res, err
	}
	if missing := manifest.Stale(target, current); len(missing) > 0 {
		// Objects the target has and the inventory does not: record them before they exist.
		if mr, err = r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, _ int64) {
			st.Inventory = toInventory(union(current, target))
		}); err != nil {
			return controller.Result{}, err
		}
	}
	labels := ownerLabels(mr, false)
	if err := r.Applier.Apply(ctx, objs, labels); err != nil {
		if refusedByServer(err) {
			return r.abandonRollback(ctx, mr, fmt.Sprintf("%s was refused: %v", action, err))
		}
		return controller.Result{}, err
	}
	if _, err := r.Applier.Delete(ctx, stale, labels); err != nil {
		return controller.Result{}, fmt.Errorf("%s: delete what only %s had: %w", action, describe("the version left", op.From), err)
	}
	healthNote := ""
	if err := r.Applier.Wait(ctx, target, labels, durationOr(mr.Spec.Timeout, 5*time.Minute), nil); err != nil {
		if !unhealthy(err) {
			return controller.Result{}, err
		}
		healthNote = "; but it is not healthy: " + err.Error()
	}
	return r.finishRollback(ctx, mr, target, healthNote)
}

func (r *Reconciler) finishRollback(ctx context.Context, mr *rollbackv1.ManifestRelease, target []manifest.Ref, healthNote string) (controller.Result, error) {
	op := *mr.Status.Operation
	manual := op.Action == rollbackv1.ActionManualRollback
	from := mr.Status.DeployedVersion
	var message, reason string
	if manual {
		reason = ReasonRolledBackByHand
		message = fmt.Sprintf("rolled back by hand from %s to %s; %s is not applied again until the source changes%s",
			describe(from, op.From), describe(op.Version, op.Number), from, healthNote)
	} else {
		reason = ReasonRolledBack
		message = fmt.Sprintf("rolled back to %s: the upgrade to snapshot %d failed: %s. It is not tried again until the source or the spec changes%s",
			describe(op.Version, op.Number), op.From, op.Reason, healthNote)
	}
	message = conditionMessage(message)
	mr, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		if manual {
			st.LastAttemptedVersion, st.LastAttemptedDigest, st.LastAttemptedGeneration = from, st.DeployedDigest, gen
			addHistory(st, rollbackv1.ReleaseHistoryEntry{Number: op.Number, Action: op.Action, Version: op.Version, Digest: op.Digest,
				Time: metav1.NewTime(r.Clock.Now()), Message: "rolled back by hand from " + describe(from, op.From)})
		}
		st.Operation = nil
		st.LastAttemptFailed = true
		st.UpgradeNumber, st.DeployedVersion, st.DeployedDigest = op.Number, op.Version, op.Digest
		st.Inventory = toInventory(target)
		conditions.Set(&st.Conditions, gen, rollbackv1.ConditionRolledBack, metav1.ConditionTrue, reason, message)
		if manual && healthNote == "" {
			conditions.MarkReady(&st.Conditions, gen, reason, message)
		} else {
			conditions.MarkStalled(&st.Conditions, gen, reason, message)
		}
	}, func(mr *rollbackv1.ManifestRelease) {
		trigger := "automatic"
		if manual {
			trigger = "manual"
		} else {
			r.Metrics.Upgrades.WithLabelValues(mr.Namespace, mr.Name, "rolled_back").Inc()
		}
		r.Metrics.Rollbacks.WithLabelValues(mr.Namespace, mr.Name, trigger).Inc()
	}, r.event(corev1.EventTypeNormal, reason, eventMessage(message)))
	if err != nil {
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: durationOr(mr.Spec.Interval, 5*time.Minute)}, nil
}

// abandonRollback gives up a rollback that can never work, saying so. The inventory keeps every
// object of both versions, so nothing is forgotten.
func (r *Reconciler) abandonRollback(ctx context.Context, mr *rollbackv1.ManifestRelease, message string) (controller.Result, error) {
	message = conditionMessage(message + "; the objects of both versions stay in the inventory: apply a version that works")
	_, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.Operation = nil
		st.LastAttemptFailed = true
		conditions.MarkStalled(&st.Conditions, gen, ReasonRollbackFailed, message)
	}, r.event(corev1.EventTypeWarning, ReasonRollbackFailed, eventMessage(message)))
	return controller.Result{}, err
}

// rollbackRequest returns a rollback-to annotation value not yet acted on.
func rollbackRequest(mr *rollbackv1.ManifestRelease) (string, bool) {
	value, ok := mr.Annotations[rollbackv1.RollbackToAnnotation]
	return value, ok && value != mr.Status.LastHandledRollback
}

// manualRollback starts a rollback to the snapshot a person asked for.
func (r *Reconciler) manualRollback(ctx context.Context, mr *rollbackv1.ManifestRelease, value string) (controller.Result, error) {
	number, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil || number < 1 {
		return r.refuseRollback(ctx, mr, value, fmt.Sprintf("%s=%q is not a snapshot number", rollbackv1.RollbackToAnnotation, value))
	}
	if number == mr.Status.UpgradeNumber {
		return r.refuseRollback(ctx, mr, value, fmt.Sprintf("snapshot %d is already deployed", number))
	}
	_, info, err := r.Snapshots.Load(ctx, mr.Namespace, mr.Name, number)
	if errors.Is(err, snapshot.ErrNotOwned) {
		return r.refuseRollback(ctx, mr, value, fmt.Sprintf("cannot roll back to snapshot %d: %v; kept snapshots: %s", number, err, r.keptNumbers(ctx, mr)),
			func(st *rollbackv1.ManifestReleaseStatus, gen int64) { markNotInChain(st, gen, err.Error()) })
	}
	if errors.Is(err, snapshot.ErrNotFound) || errors.Is(err, snapshot.ErrIncomplete) || errors.Is(err, snapshot.ErrInvalidArchive) || errors.Is(err, snapshot.ErrNotOwned) {
		return r.refuseRollback(ctx, mr, value, fmt.Sprintf("cannot roll back to snapshot %d (%v); kept snapshots: %s", number, err, r.keptNumbers(ctx, mr)))
	}
	if err != nil {
		return controller.Result{}, err
	}
	op := &rollbackv1.ReleaseOperation{Action: rollbackv1.ActionManualRollback, Number: number, Version: info.Annotations[rollbackv1.VersionAnnotation],
		Digest: info.Digest, Revision: info.Annotations[rollbackv1.RevisionAnnotation], From: mr.Status.UpgradeNumber,
		Reason: "asked for with the " + rollbackv1.RollbackToAnnotation + " annotation", StartTime: metav1.NewTime(r.Clock.Now())}
	message := fmt.Sprintf("rolling back by hand to %s", describe(op.Version, number))
	mr, err = r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.Operation = op
		st.LastHandledRollback = value
		conditions.MarkReconciling(&st.Conditions, gen, ReasonRollingBack, message)
	}, r.event(corev1.EventTypeNormal, ReasonRollingBack, message))
	if err != nil {
		return controller.Result{}, err
	}
	return r.runRollback(ctx, mr)
}

// refuseRollback answers a rollback request that cannot be done with an Event, once.
func (r *Reconciler) refuseRollback(ctx context.Context, mr *rollbackv1.ManifestRelease, value, message string, more ...func(*rollbackv1.ManifestReleaseStatus, int64)) (controller.Result, error) {
	_, err := r.writeStatus(ctx, mr, func(st *rollbackv1.ManifestReleaseStatus, gen int64) {
		st.LastHandledRollback = value
		for _, change := range more {
			change(st, gen)
		}
	}, r.event(corev1.EventTypeWarning, ReasonRollbackRefused, message))
	return controller.Result{}, err
}

// resume carries on with an operation a previous process recorded and did not finish. The
// snapshot holds exactly what it was applying, so it is applied again from there, never from a
// source that may have moved since.
func (r *Reconciler) resume(ctx context.Context, mr *rollbackv1.ManifestRelease) (controller.Result, error) {
	op := *mr.Status.Operation
	r.Recorder.Eventf(mr, corev1.EventTypeNormal, ReasonResumed, "resuming the %s to %s started at %s",
		strings.ToLower(string(op.Action)), describe(op.Version, op.Number), op.StartTime.UTC().Format(time.RFC3339))
	if op.Action != rollbackv1.ActionUpgrade {
		return r.runRollback(ctx, mr)
	}
	files, _, err := r.Snapshots.Load(ctx, mr.Namespace, mr.Name, op.Number)
	if err != nil && !errors.Is(err, snapshot.ErrNotFound) && !errors.Is(err, snapshot.ErrIncomplete) && !errors.Is(err, snapshot.ErrNotOwned) {
		return controller.Result{}, err
	}
	if err != nil {
		return r.upgradeFailed(ctx, mr, &failed{Reason: ReasonSnapshotMissing, Message: err.Error()}, rollbackv1.TestNotRun)
	}
	objs, err := r.prepare(mr, files)
	if err != nil {
		return r.upgradeFailed(ctx, mr, &failed{Reason: ReasonInvalidManifests, Message: err.Error()}, rollbackv1.TestNotRun)
	}
	return r.runUpgrade(ctx, mr, objs)
}

// refusedByServer tells a version the API server refuses (invalid, forbidden, unknown kind) from
// a server that cannot be reached.
func refusedByServer(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := int(status.Status().Code)
	return code >= 400 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout
}

// unhealthy reports whether err is about the objects' health rather than reading them.
func unhealthy(err error) bool {
	var timeout *apply.TimeoutError
	var bad *apply.FailedError
	return errors.As(err, &timeout) || errors.As(err, &bad)
}

// keptNumbers lists the snapshots of the history that still exist, for messages.
func (r *Reconciler) keptNumbers(ctx context.Context, mr *rollbackv1.ManifestRelease) string {
	var kept []string
	for _, n := range knownNumbers(mr) {
		if _, err := r.Snapshots.Head(ctx, mr.Namespace, mr.Name, n); err == nil {
			kept = append(kept, strconv.FormatInt(n, 10))
		}
	}
	if len(kept) == 0 {
		return "none"
	}
	return strings.Join(kept, ", ")
}
