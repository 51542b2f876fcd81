package holding

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
)

func TestApprovedCommitReadsOnlyWholeCommitsOfTheBranch(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	sha256 := strings.Repeat("cd", 32)
	for _, c := range []struct {
		revision, branch, want string
	}{
		{"v1.2@sha1:" + sha, "v1.2", sha},
		{"main@sha1:" + sha, "main", sha},
		{"main@sha1:" + strings.ToUpper(sha), "main", sha},
		{"main@sha256:" + sha256, "main", sha256},
		{sha, "main", sha},
		{"release@sha1:" + sha, "main", ""},
		{"sha256:" + sha256, "main", ""}, // an OCI digest, not a commit
		{"6.0.1", "main", ""},
		{"main@sha1:" + sha[:12], "main", ""},
		{"main@md5:" + sha, "main", ""},
	} {
		got, ok := approvedCommit(c.revision, []string{c.branch})
		assert.Equal(t, c.want, got, c.revision)
		assert.Equal(t, c.want != "", ok, c.revision)
	}
}

func TestPinForTakesTheNewestApprovedCommitOfAClosedEvaluatedGate(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	older, newer := strings.Repeat("1", 40), strings.Repeat("2", 40)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	closed := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "prod", Generation: 2}}
	closed.Status.ObservedGeneration = 2
	closed.Status.Approvals = []gatingv1alpha1.GateApproval{
		{Revision: "main@sha1:" + newer, At: at(-time.Minute)},
		{Revision: "main@sha1:" + older, At: at(-time.Hour)},
		{Revision: "main@sha1:" + strings.Repeat("3", 40), At: at(-time.Second), Until: at(-time.Millisecond)},
		{Revision: "6.0.1", At: at(0)},
	}
	lookup := func(gates ...*gatingv1alpha1.Gate) func(ns, name string) (*gatingv1alpha1.Gate, error) {
		return func(ns, name string) (*gatingv1alpha1.Gate, error) {
			for _, g := range gates {
				if g.Name == name {
					return g, nil
				}
			}
			return nil, nil
		}
	}
	refs := []gate.Ref{{Namespace: "ns", Name: "prod"}}

	sha, ok := pinFor(refs, lookup(closed), []string{"main"}, now)
	assert.True(t, ok)
	assert.Equal(t, newer, sha, "the newest unexpired approval of a commit on the branch")

	_, ok = pinFor(refs, lookup(closed), []string{"release"}, now)
	assert.False(t, ok, "no approval names a commit of another branch")

	open := closed.DeepCopy()
	open.Status.Open = true
	_, ok = pinFor(refs, lookup(open), []string{"main"}, now)
	assert.False(t, ok, "an open gate pins nothing")

	stale := closed.DeepCopy()
	stale.Generation = 3
	_, ok = pinFor(refs, lookup(stale), []string{"main"}, now)
	assert.False(t, ok, "a gate not evaluated since its last edit pins nothing")
}

func TestPinStateWaitsForSourceControllerToReconcileThePin(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	src := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "ns", "name": "fleet", "generation": int64(3)},
		"spec":     map[string]any{"ref": map[string]any{"branch": "main", "commit": sha}},
		"status":   map[string]any{"observedGeneration": int64(2)},
	}}
	ok, why := pinState(src, sha)
	assert.False(t, ok)
	assert.Contains(t, why, "being pinned", "someone else's commit is not the controller's pin")

	src.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: PinFieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	ok, why = pinState(src, sha)
	assert.False(t, ok)
	assert.Contains(t, why, "waiting for source-controller to fetch it")

	assert.NoError(t, unstructured.SetNestedField(src.Object, int64(3), "status", "observedGeneration"))
	ok, _ = pinState(src, sha)
	assert.True(t, ok)

	ok, _ = pinState(src, strings.Repeat("cd", 20))
	assert.False(t, ok, "pinned to another commit")
}

func TestPinObjectSetsOrGivesUpOnlyTheCommit(t *testing.T) {
	src := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "ns", "name": "fleet", "uid": "u1"}}}
	pin := pinObject(src, "abc")
	commit, _, _ := unstructured.NestedString(pin.Object, "spec", "ref", "commit")
	assert.Equal(t, "abc", commit)
	assert.Equal(t, "u1", string(pin.GetUID()))
	_, found := pinObject(src, "").Object["spec"]
	assert.False(t, found)
}

func TestSourceRefsAreWhatFluxWritesBeforeTheDigest(t *testing.T) {
	src := func(ref map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"url": "http://git.example/fleet"}
		if ref != nil {
			spec["ref"] = ref
		}
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	assert.Equal(t, []string{"master"}, sourceRefs(src(nil)), "Flux's default branch")
	assert.Equal(t, []string{"main"}, sourceRefs(src(map[string]any{"branch": "main"})))
	assert.Equal(t, []string{"v1.2"}, sourceRefs(src(map[string]any{"tag": "v1.2"})))
}
