package crdwatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{SluiceCRDs: []string{"gating.sluice.dev_gates.yaml"}}, &env)
}

type recorder struct {
	mu     sync.Mutex
	events []crdwatch.Event
}

func (r *recorder) record(e crdwatch.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) waitFor(t *testing.T, want crdwatch.Event) {
	t.Helper()
	err := testenv.Wait(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.events {
			if e == want {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "no event %+v among %+v", want, r.events)
}

func TestEventsNameTheResourceAndSayWhetherItIsNew(t *testing.T) {
	testenv.SkipIfShort(t)
	client, err := metadata.NewForConfig(env.Config)
	require.NoError(t, err)
	rec := &recorder{}
	run, err := crdwatch.Watch(client, rec.record)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	rec.waitFor(t, crdwatch.Event{Resource: schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"}, Initial: true})

	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	require.NoError(t, env.InstallCRDs(widgetCRD()))
	rec.waitFor(t, crdwatch.Event{Resource: widgets})

	ext, err := apiextensionsclient.NewForConfig(env.Config)
	require.NoError(t, err)
	require.NoError(t, ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), "widgets.example.com", metav1.DeleteOptions{}))
	rec.waitFor(t, crdwatch.Event{Resource: widgets, Deleted: true})

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.events {
		assert.False(t, e.Resource == widgets && e.Initial, "a CRD installed after the start is not initial: %+v", e)
	}
}

func TestResourceOfSplitsTheNameAtTheFirstDot(t *testing.T) {
	assert.Equal(t, schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"},
		crdwatch.ResourceOf("kustomizations.kustomize.toolkit.fluxcd.io"))
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}
