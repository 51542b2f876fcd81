package manifestrelease

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

func job(conditions ...map[string]any) *unstructured.Unstructured {
	list := make([]any, len(conditions))
	for i, c := range conditions {
		list[i] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "smoke"}, "status": map[string]any{"conditions": list}}}
}

func TestJudgeTestDecidesJobsByTheirConditionsAndOthersByHealth(t *testing.T) {
	jobRef := manifest.Ref{Group: "batch", Version: "v1", Kind: "Job", Name: "smoke"}
	judge := judgeTest(func(*unstructured.Unstructured) health.Result {
		return health.Result{Status: health.Failed, Message: "health says no"}
	})
	assert.Equal(t, health.InProgress, judge(jobRef, nil).Status)
	assert.Equal(t, health.InProgress, judge(jobRef, job()).Status)
	assert.Equal(t, health.Current, judge(jobRef, job(map[string]any{"type": "Complete", "status": "True"})).Status)
	failed := judge(jobRef, job(map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "exit 22"}))
	assert.Equal(t, health.Failed, failed.Status)
	assert.Equal(t, "Job failed (BackoffLimitExceeded): exit 22", failed.Message)
	assert.Equal(t, health.InProgress, judge(jobRef, job(map[string]any{"type": "Failed", "status": "False"})).Status)

	other := manifest.Ref{Group: "example.com", Version: "v1", Kind: "Probe", Name: "p"}
	assert.Equal(t, "health says no", judge(other, job()).Message, "other kinds go by health")
}

func TestKnownAndNextNumbers(t *testing.T) {
	mr := &rollbackv1.ManifestRelease{Status: rollbackv1.ManifestReleaseStatus{UpgradeNumber: 3,
		History:   []rollbackv1.ReleaseHistoryEntry{{Number: 5}, {Number: 3}, {Number: 1}},
		Operation: &rollbackv1.ReleaseOperation{Number: 6, From: 3}}}
	assert.Equal(t, []int64{1, 3, 5, 6, 9}, knownNumbers(mr.Status, 9, 0))
	assert.Equal(t, int64(7), nextNumber(mr.Status))
	assert.Equal(t, int64(1), nextNumber(rollbackv1.ManifestReleaseStatus{}))
}

func TestAddHistoryReplacesTheSameEntryAndIsBounded(t *testing.T) {
	st := &rollbackv1.ManifestReleaseStatus{}
	for n := int64(1); n <= rollbackv1.MaxReleaseHistory+5; n++ {
		addHistory(st, rollbackv1.ReleaseHistoryEntry{Number: n, Action: rollbackv1.ActionUpgrade})
	}
	require.Len(t, st.History, rollbackv1.MaxReleaseHistory)
	assert.Equal(t, int64(rollbackv1.MaxReleaseHistory+5), st.History[0].Number, "newest first")
	addHistory(st, rollbackv1.ReleaseHistoryEntry{Number: 24, Action: rollbackv1.ActionUpgrade, Message: "again"})
	assert.Equal(t, "again", st.History[0].Message)
	assert.Len(t, st.History, rollbackv1.MaxReleaseHistory, "the same number and action is replaced, not repeated")
}

func TestUnionKeepsEveryObjectOnce(t *testing.T) {
	a := []manifest.Ref{{Version: "v1", Kind: "ConfigMap", Namespace: "n", Name: "a"}, {Version: "v1", Kind: "ConfigMap", Namespace: "n", Name: "b"}}
	b := []manifest.Ref{{Version: "v2", Kind: "ConfigMap", Namespace: "n", Name: "b"}, {Version: "v1", Kind: "Secret", Namespace: "n", Name: "c"}}
	got := union(a, b)
	require.Len(t, got, 3)
	assert.Equal(t, "v2", got[1].Version, "the later version wins")
}

func TestRefusedByServerTellsAVersionFromAnOutage(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	assert.True(t, refusedByServer(&apply.Error{Err: apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)}))
	assert.True(t, refusedByServer(apierrors.NewForbidden(gr, "x", errors.New("no"))))
	assert.True(t, refusedByServer(&meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Gadget"}}))
	assert.False(t, refusedByServer(apierrors.NewTooManyRequests("slow down", 1)))
	assert.False(t, refusedByServer(apierrors.NewInternalError(errors.New("etcd"))))
	assert.False(t, refusedByServer(fmt.Errorf("dial tcp: connection refused")))
}

func TestUntarReadsManifestsUnderAPathOnly(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range map[string]string{"./deploy/a.yaml": "kind: A\n", "deploy/sub/b.yml": "kind: B\n", "deploy/README.md": "no",
		"other/c.yaml": "kind: C\n", "deploy/../escape.yaml": "kind: E\n"} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "deploy/link.yaml", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}))
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())

	files, err := untar(bytes.NewReader(buf.Bytes()), "deploy", 1<<20)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name+"="+string(f.Data))
	}
	assert.Equal(t, []string{"a.yaml=kind: A\n", "sub/b.yml=kind: B\n"}, names)

	_, err = untar(bytes.NewReader(buf.Bytes()), "", 10)
	assert.ErrorContains(t, err, "over 10 bytes")
}
