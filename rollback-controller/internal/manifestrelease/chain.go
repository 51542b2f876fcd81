package manifestrelease

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
)

// ReasonSnapshotNotInChain is a snapshot Secret whose digest is not the one status.snapshots
// recorded for its number.
const ReasonSnapshotNotInChain = "SnapshotNotInChain"

// chainDigests is the digest each snapshot number of the chain holds, for snapshot.Store.Digests:
// never nil, so a release that recorded no snapshot loads none. A release written before the
// chain existed has none: its history, operation and deployed digest, which are status too and so
// this controller's alone, stand in for it until its next upgrade records one.
func chainDigests(st rollbackv1.ManifestReleaseStatus) map[int64]string {
	digests := make(map[int64]string, len(st.Snapshots))
	for _, l := range st.Snapshots {
		digests[l.Number] = l.Digest
	}
	if len(st.Snapshots) > 0 {
		return digests
	}
	for _, h := range st.History {
		digests[h.Number] = h.Digest
	}
	if op := st.Operation; op != nil {
		digests[op.Number] = op.Digest
	}
	if st.UpgradeNumber > 0 {
		digests[st.UpgradeNumber] = st.DeployedDigest
	}
	return digests
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
