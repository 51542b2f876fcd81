package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/gate-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
)

var widgets = schema.GroupVersionResource{Group: "late.sluice.test", Version: "v1", Resource: "widgets"}

// A configured kind whose CRD is missing is skipped, not fatal, and held from the moment its
// CRD is installed.
func TestAKindIsHeldOnceItsCRDIsInstalled(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ctx := context.Background()
	targets, err := kinds.ParseTargets("widgets.late.sluice.test=both")
	require.NoError(t, err)
	startController(t, "late-kind", env.Config, setup.Config{Targets: targets}, func(o *options.Options) {
		o.WatchLabelSelector = shardLabel + "=late"
	})

	shard := map[string]string{shardLabel: "late"}
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true}, shard)
	waitGate(t, ns, "freeze", wait, isClosed)

	require.NoError(t, env.InstallCRDs(widgetCRD()))
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "late.sluice.test/v1", "kind": "Widget", "spec": map[string]any{}}}
	w.SetNamespace(ns)
	w.SetName("w")
	w.SetLabels(shard)
	w.SetAnnotations(map[string]string{gate.GatesAnnotation: "freeze"})
	_, err = env.Dynamic.Resource(widgets).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
	require.NoError(t, err)
	u := waitObject(t, object{gvr: widgets, kind: "Widget", namespace: ns, name: "w"}, wait, "held", heldByController)
	require.Contains(t, u.GetAnnotations()[suspend.Annotation], ns+"/freeze")
	_, recorded := u.GetAnnotations()[hold.RecordAnnotation]
	require.True(t, recorded)
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.late.sluice.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "late.sluice.test",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"suspend": {Type: "boolean"}}},
					},
				}},
			}},
		},
	}
}
