package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGateTargetSaysWhetherGatesHoldIt(t *testing.T) {
	object := func(annotations map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", Annotations: annotations}}
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        Target
	}{
		{"not suspended", map[string]string{"gating.sluice.dev/gates": "freeze"},
			Target{Kind: "Kustomization", Namespace: "apps", Name: "web"}},
		{"held by gates", map[string]string{
			"gating.sluice.dev/gates": "freeze", "gating.sluice.dev/hold": `{"reason":"freeze is closed"}`,
			"reconcile.fluxcd.io/suspended": "held by gate apps/freeze: closed"},
			Target{Kind: "Kustomization", Namespace: "apps", Name: "web", Held: true, Suspended: true, Reason: "held by gate apps/freeze: closed"}},
		{"suspended by a person", map[string]string{"reconcile.fluxcd.io/suspended": "debugging"},
			Target{Kind: "Kustomization", Namespace: "apps", Name: "web", Suspended: true, Reason: "debugging"}},
		{"yielded: record kept, annotation gone", map[string]string{"gating.sluice.dev/hold": `{"reason":"r","yielded":true}`},
			Target{Kind: "Kustomization", Namespace: "apps", Name: "web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, GateTarget("Kustomization", object(tc.annotations)))
		})
	}
}

func TestSortTargetsByKindNamespaceAndName(t *testing.T) {
	targets := []Target{{Kind: "Kustomization", Namespace: "b", Name: "a"}, {Kind: "Application", Namespace: "z", Name: "z"},
		{Kind: "Kustomization", Namespace: "a", Name: "b"}, {Kind: "Kustomization", Namespace: "a", Name: "a"}}
	SortTargets(targets)
	assert.Equal(t, []Target{{Kind: "Application", Namespace: "z", Name: "z"}, {Kind: "Kustomization", Namespace: "a", Name: "a"},
		{Kind: "Kustomization", Namespace: "a", Name: "b"}, {Kind: "Kustomization", Namespace: "b", Name: "a"}}, targets)
}
