package manifestrelease

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/text"
)

// logAttrs names the release, and the version and snapshot number it is at or moving to.
func logAttrs(mr *rollbackv1.ManifestRelease, more ...any) []any {
	attrs := append([]any{"release", mr.Namespace + "/" + mr.Name}, more...)
	if op := mr.Status.Operation; op != nil {
		return append(attrs, "action", op.Action, "version", op.Version, "snapshot", op.Number, "from", op.From)
	}
	return append(attrs, "version", mr.Status.DeployedVersion, "snapshot", mr.Status.UpgradeNumber)
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

func pruneEnabled(mr *rollbackv1.ManifestRelease) bool {
	return mr.Spec.Prune == nil || *mr.Spec.Prune
}

// ReasonSnapshotNotInChain is a snapshot Secret whose digest is not the one status.snapshots
// recorded for its number.
const ReasonSnapshotNotInChain = "SnapshotNotInChain"

// chainDigests is the digest each snapshot number of the chain holds, for snapshot.Store.Digests
// (snapshot.ChainDigests, which the UI's snapshot diff trusts too).
func chainDigests(st rollbackv1.ManifestReleaseStatus) map[int64]string {
	return snapshot.ChainDigests(st)
}

// linkSnapshot records snapshot number with digest at the end of the chain, after the snapshot
// recorded last, and keeps only the links of numbers the status still knows (keep).
func linkSnapshot(links []rollbackv1.SnapshotLink, number int64, digest string, keep []int64) []rollbackv1.SnapshotLink {
	links = keepLinks(links, keep)
	links = slices.DeleteFunc(links, func(l rollbackv1.SnapshotLink) bool { return l.Number == number })
	previous := ""
	if len(links) > 0 {
		previous = links[len(links)-1].Digest
	}
	return append(links, rollbackv1.SnapshotLink{Number: number, Digest: digest, Previous: previous})
}

// keepLinks is the chain without the links of snapshots no longer kept.
func keepLinks(links []rollbackv1.SnapshotLink, keep []int64) []rollbackv1.SnapshotLink {
	return slices.DeleteFunc(slices.Clone(links), func(l rollbackv1.SnapshotLink) bool { return !slices.Contains(keep, l.Number) })
}

// markNotInChain records that a snapshot Secret outside the chain was met and left alone.
func markNotInChain(st *rollbackv1.ManifestReleaseStatus, generation int64, message string) {
	conditions.Set(&st.Conditions, generation, rollbackv1.ConditionSnapshotsVerified, metav1.ConditionFalse, ReasonSnapshotNotInChain, conditionMessage(message))
}

// FieldManager writes ManifestRelease status and every object a release applies.
const FieldManager = "rollback-controller"

// Condition reasons and Event reasons.
const (
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonSourceNotFound     = "SourceNotFound"
	ReasonSourceUnavailable  = "SourceUnavailable"
	ReasonNoManifests        = "NoManifests"
	ReasonInvalidManifests   = "InvalidManifests"
	ReasonSnapshotTooLarge   = "SnapshotTooLarge"
	ReasonUpgrading          = "Upgrading"
	ReasonRollingBack        = "RollingBack"
	ReasonDeployed           = "Deployed"
	ReasonUpgradeSucceeded   = "UpgradeSucceeded"
	ReasonUpgradeFailed      = "UpgradeFailed"
	ReasonInstallFailed      = "InstallFailed"
	ReasonRolledBack         = "RolledBack"
	ReasonRolledBackByHand   = "RolledBackByHand"
	ReasonRollbackFailed     = "RollbackFailed"
	ReasonRollbackRefused    = "RollbackRefused"
	ReasonHeld               = "VersionHeld"
	ReasonTestsPassed        = "TestsPassed"
	ReasonTestFailed         = "TestFailed"
	ReasonTestsNotRun        = "TestsNotRun"
	ReasonResumed            = "OperationResumed"
	ReasonPruneFailed        = "PruneFailed"
	ReasonSnapshotMissing    = "SnapshotMissing"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonHealthCheckFailed  = "HealthCheckFailed"
	ReasonUpgradeStarted     = "UpgradeStarted"
	ReasonManualRollbackDone = "ManualRollback"
)

// ReasonForbidden is an operation the identity a release acts as may not carry out, or a
// ServiceAccount the controller may not impersonate.
const ReasonForbidden = "Forbidden"

// ReasonSnapshotNameTaken is a snapshot Secret name held by a Secret this release did not write.
const ReasonSnapshotNameTaken = "SnapshotNameTaken"

// interval is spec.interval, or its default.
func interval(mr *rollbackv1.ManifestRelease) time.Duration {
	return durationOr(mr.Spec.Interval, 5*time.Minute)
}

func durationOr(d *metav1.Duration, fallback time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return fallback
	}
	return d.Duration
}

func holdsFinalizer(mr *rollbackv1.ManifestRelease) bool {
	return slices.Contains(mr.Finalizers, rollbackv1.ManifestReleaseFinalizer)
}

func normal(reason, message string) event {
	return event{Type: corev1.EventTypeNormal, Reason: reason, Message: message}
}

func warning(reason, message string) event {
	return event{Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}

// ownerLabels mark the objects of mr; tests adds the test label.
func ownerLabels(mr *rollbackv1.ManifestRelease, tests bool) map[string]string {
	labels := map[string]string{rollbackv1.ReleaseNameLabel: mr.Name, rollbackv1.ReleaseNamespaceLabel: mr.Namespace}
	if tests {
		labels[rollbackv1.TestLabel] = "true"
	}
	return labels
}

func targetNamespace(mr *rollbackv1.ManifestRelease) string {
	if mr.Spec.TargetNamespace != "" {
		return mr.Spec.TargetNamespace
	}
	return mr.Namespace
}

func toInventory(refs []manifest.Ref) []rollbackv1.InventoryEntry {
	out := make([]rollbackv1.InventoryEntry, len(refs))
	for i, r := range refs {
		out[i] = rollbackv1.InventoryEntry{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	}
	return out
}

// union is every object of a and b, identified as pkg/manifest does, b's version winning.
func union(a, b []manifest.Ref) []manifest.Ref {
	seen := map[string]int{}
	var out []manifest.Ref
	for _, list := range [][]manifest.Ref{a, b} {
		for _, r := range list {
			if i, ok := seen[r.ID()]; ok {
				out[i] = r
				continue
			}
			seen[r.ID()] = len(out)
			out = append(out, r)
		}
	}
	return out
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

// Reasons of the Event that says what the deletion of a release did with its objects.
const (
	ReasonObjectsDeleted = "ObjectsDeleted"
	ReasonObjectsLeft    = "ObjectsLeft"
)

// deletingAction names what a deleted release does with its objects, in its conditions.
const deletingAction = "deleting the objects of the deleted release"

func filters(t *rollbackv1.ReleaseTest) []manifest.Filter {
	out := make([]manifest.Filter, len(t.Filters))
	for i, f := range t.Filters {
		out[i] = manifest.Filter{Name: f.Name, Exclude: f.Exclude}
	}
	return out
}
