package healthcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

func object(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

func TestIndexWakesOnlyTheHealthChecksThatReadTheObject(t *testing.T) {
	deployments := dynamicwatch.Scope{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "apps"}
	x := newIndex()
	byName := &interest{}
	byName.addName("apps", "web")
	x.set("apps/by-name", map[dynamicwatch.Scope]*interest{deployments: byName})
	x.set("apps/by-label", map[dynamicwatch.Scope]*interest{deployments: {selectors: []labels.Selector{labels.SelectorFromSet(labels.Set{"tier": "web"})}}})

	assert.Equal(t, []string{"apps/by-name"}, x.owners(deployments, nil, object("apps", "web", nil)))
	assert.Empty(t, x.owners(deployments, nil, object("apps", "worker", nil)))
	assert.Equal(t, []string{"apps/by-label"}, x.owners(deployments, nil, object("apps", "worker", map[string]string{"tier": "web"})))
	assert.Equal(t, []string{"apps/by-label"}, x.owners(deployments, object("apps", "worker", map[string]string{"tier": "web"}), object("apps", "worker", nil)),
		"an object leaving the selector changes the set too")
	other := dynamicwatch.Scope{Resource: deployments.Resource, Namespace: "other"}
	assert.Empty(t, x.owners(other, nil, object("other", "web", nil)), "scopes are separate")

	x.remove("apps/by-name")
	assert.Empty(t, x.owners(deployments, nil, object("apps", "web", nil)))
	x.set("apps/by-label", nil)
	assert.Empty(t, x.byScope, "nothing is left behind")
}
