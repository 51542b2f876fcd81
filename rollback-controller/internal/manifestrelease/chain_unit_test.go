package manifestrelease

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

func TestLinkSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		links  []rollbackv1.SnapshotLink
		number int64
		digest string
		keep   []int64
		want   []rollbackv1.SnapshotLink
	}{
		{name: "the first link has no previous", number: 1, digest: "d1", keep: []int64{1},
			want: []rollbackv1.SnapshotLink{{Number: 1, Digest: "d1"}}},
		{name: "a link names the digest recorded before it", links: []rollbackv1.SnapshotLink{{Number: 1, Digest: "d1"}},
			number: 2, digest: "d2", keep: []int64{1, 2},
			want: []rollbackv1.SnapshotLink{{Number: 1, Digest: "d1"}, {Number: 2, Digest: "d2", Previous: "d1"}}},
		{name: "numbers no longer known leave the chain", links: []rollbackv1.SnapshotLink{{Number: 1, Digest: "d1"}, {Number: 2, Digest: "d2", Previous: "d1"}},
			number: 3, digest: "d3", keep: []int64{2, 3},
			want: []rollbackv1.SnapshotLink{{Number: 2, Digest: "d2", Previous: "d1"}, {Number: 3, Digest: "d3", Previous: "d2"}}},
		{name: "a number saved again replaces its link", links: []rollbackv1.SnapshotLink{{Number: 1, Digest: "d1"}, {Number: 2, Digest: "old", Previous: "d1"}},
			number: 2, digest: "d2", keep: []int64{1, 2},
			want: []rollbackv1.SnapshotLink{{Number: 1, Digest: "d1"}, {Number: 2, Digest: "d2", Previous: "d1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.links)
			assert.Equal(t, tc.want, linkSnapshot(tc.links, tc.number, tc.digest, tc.keep))
			assert.Equal(t, before, fmt.Sprint(tc.links), "the status read is not changed in place")
		})
	}
	assert.Equal(t, map[int64]string{}, chainDigests(rollbackv1.ManifestReleaseStatus{}), "no chain loads nothing, rather than anything")
}

func TestChainDigests(t *testing.T) {
	history := []rollbackv1.ReleaseHistoryEntry{{Number: 2, Digest: "h2"}, {Number: 1, Digest: "h1"}}
	assert.Equal(t, map[int64]string{1: "d1", 3: "d3"}, chainDigests(rollbackv1.ManifestReleaseStatus{
		Snapshots: []rollbackv1.SnapshotLink{{Number: 1, Digest: "d1"}, {Number: 3, Digest: "d3", Previous: "d1"}}, History: history}),
		"the chain alone, once there is one")
	assert.Equal(t, map[int64]string{1: "h1", 2: "h2", 3: "o3"}, chainDigests(rollbackv1.ManifestReleaseStatus{
		History: history, UpgradeNumber: 2, DeployedDigest: "h2", Operation: &rollbackv1.ReleaseOperation{Number: 3, Digest: "o3"}}),
		"a release from before the chain: its status stands in")
}

func TestNotOwnedSplitsObjectsLeftFromFailures(t *testing.T) {
	a := manifest.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	b := manifest.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "b"}
	left, err := notOwned(errors.Join(&apply.Error{Object: a, Err: apply.ErrNotOwned}, &apply.Error{Object: b, Err: errors.New("forbidden")}))
	assert.Equal(t, []manifest.Ref{a}, left)
	assert.EqualError(t, err, b.String()+": forbidden")

	left, err = notOwned(&apply.Error{Object: a, Err: apply.ErrNotOwned})
	assert.Equal(t, []manifest.Ref{a}, left)
	assert.NoError(t, err)
	left, err = notOwned(nil)
	assert.Empty(t, left)
	assert.NoError(t, err)
}
