package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/gate-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
)

var fieldless = schema.GroupVersionResource{Group: "strict.sluice.test", Version: "v1", Resource: "fieldlesses"}

// A kind whose schema lacks the field it is held by (as an Argo CD older than 3.1 lacks
// spec.syncPolicy.automated.enabled) has the field pruned by the API server without an error, even
// with strict field validation: the controller sees it missing from the API server's answer and
// says so on the object in a HoldFailed Event naming the field.
func TestAHoldOnAFieldTheSchemaLacksFailsByName(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ctx := context.Background()
	crd := widgetCRD()
	crd.Name = "fieldlesses.strict.sluice.test"
	crd.Spec.Group = fieldless.Group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "fieldlesses", Singular: "fieldless", Kind: "Fieldless", ListKind: "FieldlessList"}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object"}
	require.NoError(t, env.InstallCRDs(crd))

	targets, err := kinds.ParseTargets("fieldlesses.strict.sluice.test=spec")
	require.NoError(t, err)
	startController(t, "strict", env.Config, setup.Config{Targets: targets}, func(o *options.Options) {
		o.WatchLabelSelector = shardLabel + "=strict"
	})
	shard := map[string]string{shardLabel: "strict"}
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true}, shard)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "strict.sluice.test/v1", "kind": "Fieldless", "spec": map[string]any{}}}
	u.SetNamespace(ns)
	u.SetName("f")
	u.SetLabels(shard)
	u.SetAnnotations(map[string]string{gate.GatesAnnotation: "freeze"})
	_, err = env.Dynamic.Resource(fieldless).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)

	failed := waitEvent(t, ns, "f", "HoldFailed")
	assert.Contains(t, failed[0], "dropped spec.suspend", "the Event names the field the schema lacks")
}
