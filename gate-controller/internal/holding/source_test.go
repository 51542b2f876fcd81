package holding

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/pkg/fluxsource"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
)

func TestFollowersFollowOneSourceAtATime(t *testing.T) {
	f := NewFollowers()
	f.Follow("k1", "git-a")
	f.Follow("k2", "git-a")
	assert.ElementsMatch(t, []string{"k1", "k2"}, f.Of("git-a"))
	f.Follow("k1", "git-b")
	assert.Equal(t, []string{"k2"}, f.Of("git-a"), "a target follows only its current source")
	assert.Equal(t, []string{"k1"}, f.Of("git-b"))
	f.Unfollow("k2")
	f.Unfollow("k2")
	assert.Empty(t, f.Of("git-a"))
	f.Unfollow("k1")
	assert.Empty(t, f.targets, "nothing is left behind")
	assert.Empty(t, f.sourceOf)
	var none *Followers
	none.Follow("k", "s")
	assert.Nil(t, none.Of("s"))
}

var gitRepositories = kinds.Kind{
	GVR:  schema.GroupVersionResource{Group: fluxsource.Group, Version: "v1", Resource: "gitrepositories"},
	Kind: "GitRepository", Namespaced: true, Mode: hold.ModeBoth,
}

// approvingFixture is a closed gate approving approved, and the target web following the
// GitRepository repo, whose artifact is at revision.
func approvingFixture(t *testing.T, approved, revision string, watchSources bool) (*fixture, string) {
	f := newFixture(t)
	f.gate(t, "prod", false, 3, 3)
	g, err := f.r.Gates.Gates("apps").Get("prod")
	require.NoError(t, err)
	g.Status.Approvals = []gatingv1alpha1.GateApproval{{Revision: approved, By: "alice"}}
	f.r.Followers = NewFollowers()
	tracker := f.r.Dynamic.(*dynamicfake.FakeDynamicClient).Tracker()
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": "apps", "name": "web"},
		"spec":     map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "repo"}},
	}}
	require.NoError(t, tracker.Create(kustomizations.GVR, ks, "apps"))
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "apps", "name": "repo"},
		"status":   map[string]any{"artifact": map[string]any{"revision": revision}},
	}}
	require.NoError(t, tracker.Create(gitRepositories.GVR, repo, "apps"))
	if watchSources {
		informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, Indexers)
		require.True(t, f.r.Registry.Add(&Watched{Kind: gitRepositories, Informer: informer}))
	}
	return f, f.target(t, map[string]string{gate.GatesAnnotation: "prod"})
}

func TestReconcileReleasesATargetWhoseSourceIsAtAnApprovedRevision(t *testing.T) {
	f, key := approvingFixture(t, "main@sha1:"+strings.Repeat("a", 40), "main@sha1:"+strings.Repeat("a", 40), true)
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	assert.Empty(t, f.applied, "not held: its source is at the approved revision")
	assert.Equal(t, []string{key}, f.r.Followers.Of("gitrepositories.source.toolkit.fluxcd.io|apps/repo"), "it follows its source")
}

func TestReconcileHoldsATargetWhoseSourceMovedPastTheApproval(t *testing.T) {
	f, key := approvingFixture(t, "main@sha1:"+strings.Repeat("a", 40), "main@sha1:"+strings.Repeat("b", 40), true)
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, f.applied, 1)
	assert.Equal(t, "held: gate apps/prod is closed (Manual: release sign-off); it approves main@sha1:aaaaaaaaaaaa, not main@sha1:bbbbbbbbbbbb",
		f.applied[0].GetAnnotations()[suspend.Annotation])
}

func TestReconcileHoldsATargetWhoseSourceKindIsNotWatched(t *testing.T) {
	f, key := approvingFixture(t, "main@sha1:"+strings.Repeat("a", 40), "main@sha1:"+strings.Repeat("a", 40), false)
	_, err := f.r.Reconcile(context.Background(), key)
	require.NoError(t, err)
	require.Len(t, f.applied, 1, "an unknown revision is not approved: it fails closed")
	assert.Contains(t, f.applied[0].GetAnnotations()[suspend.Annotation], "add gitrepositories.source.toolkit.fluxcd.io to --targets")
}
