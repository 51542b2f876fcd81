package argocd

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

// The CRDs come from the module, serve and store the resources this package names, and have the
// switch the gate-controller holds Applications by.
func TestCRDPathsServeTheNamedResourcesWithTheAutomatedSyncSwitch(t *testing.T) {
	testenv.SkipIfShort(t)
	paths, err := CRDPaths()
	require.NoError(t, err)

	stored := map[schema.GroupVersionResource]bool{}
	var application *apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(data, &crd), p)
		require.Equal(t, "CustomResourceDefinition", crd.Kind, p)
		for _, v := range crd.Spec.Versions {
			if v.Storage && v.Served {
				stored[schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}] = true
			}
		}
		if crd.Spec.Names.Kind == "Application" {
			application = &crd
		}
	}
	assert.True(t, stored[Applications])
	assert.True(t, stored[AppProjects])
	require.NotNil(t, application)
	schema := application.Spec.Versions[0].Schema.OpenAPIV3Schema
	automated := schema.Properties["spec"].Properties["syncPolicy"].Properties["automated"]
	assert.Equal(t, "boolean", automated.Properties["enabled"].Type)

	again, err := cached()
	require.NoError(t, err)
	assert.Equal(t, paths, again, "a second process finds the same cached files")
}
