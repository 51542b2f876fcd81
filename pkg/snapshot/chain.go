package snapshot

import (
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// ChainDigests is the digest each snapshot number of a ManifestRelease's chain holds, for
// Store.Digests: never nil, so a release that recorded no snapshot loads none. A release written
// before the chain existed has none: its history, operation and deployed digest, which are status
// too and so the rollback-controller's alone, stand in for it until its next upgrade records one.
// Every reader of a release's snapshots (the rollback-controller, the UI) trusts the same chain.
func ChainDigests(st rollbackv1.ManifestReleaseStatus) map[int64]string {
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
