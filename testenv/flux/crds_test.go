package flux

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/testenv"
)

// The CRDs come from the modules (downloaded or generated), and every resource this package
// names is served at that version and stored there, so tests that use the variables talk to
// the real schema.
func TestCRDPathsServeTheNamedResources(t *testing.T) {
	testenv.SkipIfShort(t)
	paths, err := CRDPaths()
	require.NoError(t, err)

	served := map[schema.GroupVersionResource]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(data, &crd), p)
		require.Equal(t, "CustomResourceDefinition", crd.Kind, p)
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				served[schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}] = v.Served
			}
		}
	}
	for _, gvr := range []schema.GroupVersionResource{
		GitRepositories, OCIRepositories, HelmRepositories, Buckets, HelmCharts,
		Kustomizations, HelmReleases, ImageUpdateAutomations,
	} {
		assert.True(t, served[gvr], "%s is served and stored by the Flux CRDs", gvr)
	}

	again, err := cachedCRDs()
	require.NoError(t, err)
	assert.Equal(t, paths, again, "a second process finds the same cached files")
}
