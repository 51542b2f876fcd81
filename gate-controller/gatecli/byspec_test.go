package gatecli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

func infoOf(group, version, resourceName, kind string) *resource.Info {
	return &resource.Info{Mapping: &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: group, Version: version, Resource: resourceName},
		GroupVersionKind: schema.GroupVersionKind{Group: group, Version: version, Kind: kind},
	}}
}

// suspend writes spec.suspend only where it exists and is what the gate-controller holds by: not
// on an Argo CD Application, whose CRD has no such field.
func TestBySpecOnlyForKindsHeldBySpecSuspend(t *testing.T) {
	assert.True(t, bySpec(infoOf("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization")))
	assert.False(t, bySpec(infoOf("argoproj.io", "v1alpha1", "applications", "Application")))
	assert.False(t, bySpec(infoOf("gating.sluice.dev", "v1alpha1", "gates", "Gate")))
}
