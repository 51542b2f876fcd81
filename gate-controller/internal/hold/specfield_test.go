package hold

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var application = Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "shop", UID: "u", ResourceVersion: "3"}

func TestAnArgoCDApplicationIsHeldByTurningAutomatedSyncOffAlone(t *testing.T) {
	p := Decide(Target{}, ModeBoth, closed)
	require.True(t, p.Desired.Spec())
	u := p.Desired.ApplyObject(application)
	enabled, found, err := unstructured.NestedBool(u.Object, "spec", "syncPolicy", "automated", "enabled")
	require.NoError(t, err)
	assert.True(t, found)
	assert.False(t, enabled)
	automated, _, _ := unstructured.NestedMap(u.Object, "spec", "syncPolicy", "automated")
	assert.Len(t, automated, 1, "only the switch: the user's prune, selfHeal and allowEmpty are not applied")
	assert.NotContains(t, u.Object["spec"], "suspend", "an Application has no spec.suspend")

	reduced := SpecOnlyApplyObject(application)
	assert.Equal(t, u.Object["spec"], reduced.Object["spec"])

	flux := p.Desired.ApplyObject(Ref{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"})
	assert.Equal(t, map[string]any{"suspend": true}, flux.Object["spec"])
	// A kind named Application in another group is not Argo CD's.
	other := p.Desired.ApplyObject(Ref{APIVersion: "app.k8s.io/v1beta1", Kind: "Application"})
	assert.Equal(t, map[string]any{"suspend": true}, other.Object["spec"])
}

// The entry in the shape the API server writes it for an apply of the Argo CD hold.
func TestOwnedFieldsReadsTheArgoCDSwitch(t *testing.T) {
	ours := entry(FieldManager, metav1.ManagedFieldsOperationApply, "",
		`{"f:metadata":{"f:annotations":{"f:gating.sluice.dev/hold":{}}},"f:spec":{"f:syncPolicy":{"f:automated":{"f:enabled":{}}}}}`)
	assert.Equal(t, Owned{Record: true, Spec: true}, OwnedFields([]metav1.ManagedFieldsEntry{ours}))

	// Owning the user's automated policy, or the map alone, is not owning the switch.
	partial := entry(FieldManager, metav1.ManagedFieldsOperationApply, "",
		`{"f:spec":{"f:syncPolicy":{"f:automated":{".":{},"f:prune":{}}}}}`)
	assert.Equal(t, Owned{}, OwnedFields([]metav1.ManagedFieldsEntry{partial}))
	odd := entry(FieldManager, metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:syncPolicy":[]}}`)
	assert.Equal(t, Owned{}, OwnedFields([]metav1.ManagedFieldsEntry{odd}))
}

func TestSpecFieldOf(t *testing.T) {
	assert.Equal(t, ArgoCDAutomatedSync, SpecFieldOf(schema.GroupKind{Group: "argoproj.io", Kind: "Application"}))
	assert.Equal(t, Suspend, SpecFieldOf(schema.GroupKind{Group: "argoproj.io", Kind: "AppProject"}))
	assert.Equal(t, Suspend, SpecFieldOf(schema.GroupKind{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}))
	assert.Equal(t, Suspend, specFieldOfRef(Ref{APIVersion: "a/b/c", Kind: "Application"}), "an unreadable apiVersion is not Argo CD's")
}
