package fluxsource

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOf(t *testing.T) {
	kustomizations, helmReleases := Kustomizations, HelmReleases
	source := func(resource, ns, name string) Ref {
		return Ref{GroupResource: schema.GroupResource{Group: Group, Resource: resource}, Namespace: ns, Name: name}
	}
	obj := func(kind string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: fields}
		u.SetKind(kind)
		u.SetNamespace("apps")
		u.SetName("web")
		return u
	}
	cases := []struct {
		name    string
		gr      schema.GroupResource
		obj     *unstructured.Unstructured
		want    Ref
		problem string
	}{
		{"a Kustomization's GitRepository in its namespace", kustomizations,
			obj("Kustomization", map[string]any{"spec": map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "repo"}}}),
			source("gitrepositories", "apps", "repo"), ""},
		{"a Kustomization's OCIRepository in another namespace", kustomizations,
			obj("Kustomization", map[string]any{"spec": map[string]any{"sourceRef": map[string]any{"kind": "OCIRepository", "name": "repo", "namespace": "flux-system"}}}),
			source("ocirepositories", "flux-system", "repo"), ""},
		{"a Kustomization without a source", kustomizations, obj("Kustomization", map[string]any{"spec": map[string]any{}}),
			Ref{}, "it has no spec.sourceRef"},
		{"a Kustomization naming an unknown kind", kustomizations,
			obj("Kustomization", map[string]any{"spec": map[string]any{"sourceRef": map[string]any{"kind": "Widget", "name": "w"}}}),
			Ref{}, `spec.sourceRef names Widget "w", not a Flux source`},
		{"a HelmRelease's chartRef", helmReleases,
			obj("HelmRelease", map[string]any{"spec": map[string]any{"chartRef": map[string]any{"kind": "OCIRepository", "name": "podinfo"}}}),
			source("ocirepositories", "apps", "podinfo"), ""},
		{"a HelmRelease's HelmChart as helm-controller reports it", helmReleases,
			obj("HelmRelease", map[string]any{
				"spec":   map[string]any{"chart": map[string]any{"spec": map[string]any{"sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}}},
				"status": map[string]any{"helmChart": "flux-system/apps-web"},
			}),
			source("helmcharts", "flux-system", "apps-web"), ""},
		{"a HelmRelease's HelmChart before helm-controller reports it", helmReleases,
			obj("HelmRelease", map[string]any{"spec": map[string]any{"chart": map[string]any{"spec": map[string]any{
				"sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts", "namespace": "flux-system"}}}}}),
			source("helmcharts", "flux-system", "apps-web"), ""},
		{"another kind has no source", schema.GroupResource{Group: "promoter.sluice.dev", Resource: "promotionstrategies"},
			obj("PromotionStrategy", map[string]any{}), Ref{}, "a PromotionStrategy has no Flux source to follow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Of(c.gr, c.obj)
			if c.problem != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.problem)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestArtifactRevision(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"artifact": map[string]any{"revision": "main@sha1:abc"}}}}
	rev, err := ArtifactRevision(u)
	require.NoError(t, err)
	assert.Equal(t, "main@sha1:abc", rev)
	_, err = ArtifactRevision(&unstructured.Unstructured{Object: map[string]any{}})
	assert.ErrorContains(t, err, "has no artifact yet")
}
