package fluxwake

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sluicehq/sluice/testenv"
)

func source(namespace, name, url, branch string) *unstructured.Unstructured {
	u := gitRepository(url, map[string]any{"branch": branch})
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// startWaker runs a Waker on fake clients until the test ends; crdInstalled says whether
// Flux's GitRepository CRD is there.
func startWaker(t *testing.T, crdInstalled bool, objs ...runtime.Object) (*Waker, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	var crds []runtime.Object
	if crdInstalled {
		crds = append(crds, &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: "gitrepositories.source.toolkit.fluxcd.io"},
		})
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, crds...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GitRepositories: "GitRepositoryList"}, objs...)
	w, err := New(dyn, meta, "promoter-controller", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	w.clock = clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 8, 30, 0, 123456789, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, testenv.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) { return w.HasSynced(), nil }))
	return w, dyn
}

func patched(dyn *dynamicfake.FakeDynamicClient) []string {
	var names []string
	for _, a := range dyn.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			names = append(names, p.GetNamespace()+"/"+p.GetName())
		}
	}
	slices.Sort(names)
	return names
}

// pinnedSource is a GitRepository on branch held on one commit, as the gate-controller pins one
// for an approved revision.
func pinnedSource(ns, name, url, branch string) *unstructured.Unstructured {
	u := source(ns, name, url, branch)
	_ = unstructured.SetNestedField(u.Object, "3549486a9f2b55c5b7a3d5b1f2e8c7d6a5b4c3d2", "spec", "ref", "commit")
	return u
}

// A merge into prod asks the sources of prod in that repository to fetch, in any namespace,
// however their URL is spelled, and no other source: not one pinned on a commit of prod, which a
// fetch would not move.
func TestRequestSetsRequestedAtOnTheSourcesOfTheBranch(t *testing.T) {
	const repo = "https://git.example.com/team/app.git"
	w, dyn := startWaker(t, true,
		source("flux-system", "prod", repo, "prod"),
		source("team", "prod-ssh", "ssh://git@git.example.com/team/app", "prod"),
		source("flux-system", "staging", repo, "staging"),
		source("flux-system", "other-prod", "https://git.example.com/team/other.git", "prod"),
		pinnedSource("flux-system", "prod-approved", repo, "prod"),
	)
	w.Request("https://git.example.com/team/app", "prod")

	ctx := context.Background()
	require.NoError(t, testenv.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(patched(dyn)) >= 2, nil
	}))
	assert.Equal(t, []string{"flux-system/prod", "team/prod-ssh"}, patched(dyn))
	for _, ns := range [][2]string{{"flux-system", "prod"}, {"team", "prod-ssh"}} {
		got, err := dyn.Resource(GitRepositories).Namespace(ns[0]).Get(ctx, ns[1], metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "2026-11-29T08:30:00.123456789Z", got.GetAnnotations()[RequestedAtAnnotation], ns)
		branch, _, _ := unstructured.NestedString(got.Object, "spec", "ref", "branch")
		assert.Equal(t, "prod", branch, "the patch leaves the spec alone")
	}
	staging, err := dyn.Resource(GitRepositories).Namespace("flux-system").Get(ctx, "staging", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, staging.GetAnnotations())
}

// Without Flux's CRD a merge wakes nothing, and nothing is read or patched: the Waker only
// waits for the CRD.
func TestRequestWithoutFluxDoesNothing(t *testing.T) {
	w, dyn := startWaker(t, false)
	assert.Equal(t, []string{GitRepositories.GroupResource().String()}, groupResources(w.kinds.Missing(GitRepositories.GroupResource())))
	w.Request("https://git.example.com/team/app.git", "prod")
	w.Request("not a url", "prod")
	require.NoError(t, testenv.Wait(context.Background(), 10*time.Second, func(context.Context) (bool, error) {
		return w.queue.Len() == 0, nil
	}))
	assert.Empty(t, dyn.Actions(), "no list, watch or patch of GitRepositories")
}

func groupResources(grs []schema.GroupResource) []string {
	var out []string
	for _, gr := range grs {
		out = append(out, gr.String())
	}
	return out
}

// A nil Waker (Flux refresh off in the controller) takes requests and does nothing.
func TestNilWakerTakesRequests(t *testing.T) {
	var w *Waker
	assert.NotPanics(t, func() { w.Request("https://git.example.com/team/app.git", "prod") })
}
