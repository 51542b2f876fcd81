package manifestrelease

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/text"
)

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

// logAttrs names the release, and the version and snapshot number it is at or moving to.
func logAttrs(mr *rollbackv1.ManifestRelease, more ...any) []any {
	attrs := append([]any{"release", mr.Namespace + "/" + mr.Name}, more...)
	if op := mr.Status.Operation; op != nil {
		return append(attrs, "action", op.Action, "version", op.Version, "snapshot", op.Number, "from", op.From)
	}
	return append(attrs, "version", mr.Status.DeployedVersion, "snapshot", mr.Status.UpgradeNumber)
}

func (r *Reconciler) logger() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func fromInventory(entries []rollbackv1.InventoryEntry) []manifest.Ref {
	out := make([]manifest.Ref, len(entries))
	for i, e := range entries {
		out[i] = manifest.Ref{Group: e.Group, Version: e.Version, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
	}
	return out
}

func describe(version string, number int64) string {
	return fmt.Sprintf("%s (snapshot %d)", version, number)
}

// Messages are cut to fit: conditions by characters, as the API counts them, Events by bytes, as
// their 1 KiB note limit does.
const (
	maxConditionMessage = 2048
	maxEventMessage     = 1024
)

func conditionMessage(s string) string { return text.Truncate(s, maxConditionMessage) }

func eventMessage(s string) string { return text.TruncateBytes(s, maxEventMessage) }

// knownNumbers is every snapshot number the status names, and more, sorted.
func knownNumbers(st rollbackv1.ManifestReleaseStatus, more ...int64) []int64 {
	numbers := slices.Clone(more)
	numbers = append(numbers, st.UpgradeNumber)
	for _, h := range st.History {
		numbers = append(numbers, h.Number)
	}
	if op := st.Operation; op != nil {
		numbers = append(numbers, op.Number, op.From)
	}
	slices.Sort(numbers)
	numbers = slices.Compact(numbers)
	return slices.DeleteFunc(numbers, func(n int64) bool { return n < 1 })
}

// nextNumber is one more than any number the release used. A number a crash kept out of the
// status may be used again: writeSnapshot replaces what it holds.
func nextNumber(st rollbackv1.ManifestReleaseStatus) int64 {
	known := knownNumbers(st)
	if len(known) == 0 {
		return 1
	}
	return known[len(known)-1] + 1
}

func pruneEnabled(mr *rollbackv1.ManifestRelease) bool {
	return mr.Spec.Prune == nil || *mr.Spec.Prune
}
