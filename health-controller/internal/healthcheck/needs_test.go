package healthcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/health-controller/internal/sources"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

func TestNeedsReadSourcesWholeAndTargetsAsTheirChecksDo(t *testing.T) {
	deployments := kind{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		scope: dynamicwatch.Scope{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "apps"}}
	kustomizations := kind{gvk: sources.Kustomization.WithVersion("v1"),
		scope: dynamicwatch.Scope{Resource: schema.GroupVersionResource{Group: sources.Kustomization.Group, Version: "v1", Resource: "kustomizations"}, Namespace: "apps"}}
	p := newPlan(nil, nil, true)
	p.sources = []source{{gk: sources.Kustomization, namespace: "apps", name: "web", kind: kustomizations, served: true}}
	p.interest(kustomizations.scope).addName("apps", "web")
	p.objects = []namedObject{{kind: deployments, namespace: "apps", name: "web"}, {kind: deployments, namespace: "apps", name: "api"}}
	p.interest(deployments.scope).addName("apps", "web")
	calls := 0
	reads := func(gvk schema.GroupVersionKind) [][]string {
		calls++
		return [][]string{{"status"}, {"spec", "replicas"}}
	}
	got := map[dynamicwatch.Scope]dynamicwatch.Fields{}
	for _, n := range p.needs(reads) {
		got[n.Scope] = n.Fields
	}
	assert.Len(t, got, 2)
	assert.Nil(t, got[kustomizations.scope], "a source is read whole")
	assert.Equal(t, dynamicwatch.FieldsOf([]string{"status"}, []string{"spec", "replicas"}), got[deployments.scope])
	assert.Equal(t, 1, calls, "reads is asked once per kind")

	// A kind that is both a source and a target is read whole.
	p.objects = append(p.objects, namedObject{kind: kustomizations, namespace: "apps", name: "other"})
	for _, n := range p.needs(reads) {
		if n.Scope == kustomizations.scope {
			assert.Nil(t, n.Fields)
		}
	}
}
