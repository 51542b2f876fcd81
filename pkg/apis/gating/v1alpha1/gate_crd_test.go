package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	gatingv1alpha1 "github.com/sluicehq/sluice/pkg/apis/gating/v1alpha1"
)

// loadGateCRD reads the generated CRD and validates it the way the API server does on create,
// which compiles every CEL rule and checks its estimated cost.
func loadGateCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "crds", "gating.sluice.dev_gates.yaml"))
	require.NoError(t, err, "run make generate")
	var v1crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(data, &v1crd))
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1crd)
	var crd apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1crd, &crd, nil))
	require.Empty(t, crdvalidation.ValidateCustomResourceDefinition(context.Background(), &crd))
	return &crd
}

// validateGate runs the schema and the CEL rules of the CRD over a gate, as the API server does on create.
func validateGate(t *testing.T, crd *apiextensions.CustomResourceDefinition, g *gatingv1alpha1.Gate) field.ErrorList {
	t.Helper()
	// With a single version, conversion to the internal type moves the schema up to spec.validation.
	props := crd.Spec.Validation.OpenAPIV3Schema
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g)
	require.NoError(t, err)
	obj["apiVersion"], obj["kind"] = gatingv1alpha1.SchemeGroupVersion.String(), "Gate"

	schemaValidator, _, err := validation.NewSchemaValidator(props)
	require.NoError(t, err)
	errs := validation.ValidateCustomResource(nil, obj, schemaValidator)

	structural, err := structuralschema.NewStructural(props)
	require.NoError(t, err)
	celErrs, _ := cel.NewValidator(structural, true, celconfig.PerCallLimit).
		Validate(context.Background(), nil, structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

func gateWith(w gatingv1alpha1.GateWindow) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Name: "no-deploy-fridays", Namespace: "flux-system"},
		Spec:       gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{w}},
	}
}

func friday() gatingv1alpha1.GateWindow {
	return gatingv1alpha1.GateWindow{
		Schedule: "0 18 * * FRI", Duration: metav1.Duration{Duration: 62 * time.Hour},
		TimeZone: "Europe/London", Kind: gatingv1alpha1.StateClosed, Description: "No Deploy Friday",
	}
}

func TestCRDAcceptsAGateWithWindowsAndOverride(t *testing.T) {
	crd := loadGateCRD(t)
	g := gateWith(friday())
	g.Spec.Windows = append(g.Spec.Windows, gatingv1alpha1.GateWindow{
		Schedule: " @daily ", Duration: metav1.Duration{Duration: 90 * time.Minute}, Kind: gatingv1alpha1.StateOpen,
	})
	g.Spec.Override = &gatingv1alpha1.GateOverride{State: gatingv1alpha1.StateOpen, Until: metav1.Now(), Message: "hotfix"}
	assert.Empty(t, validateGate(t, crd, g))
}

func TestCRDRejectsBadWindows(t *testing.T) {
	crd := loadGateCRD(t)
	cases := map[string]struct {
		mutate  func(*gatingv1alpha1.GateWindow)
		errHave string
	}{
		"four fields":            {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "0 18 * FRI" }, "five fields"},
		"seconds field":          {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "0 0 18 * * FRI" }, "five fields"},
		"zone inside schedule":   {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "CRON_TZ=UTC 0 18 * * FRI" }, "timeZone"},
		"@every":                 {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "@every 1h" }, "five fields"},
		"zero duration":          {func(w *gatingv1alpha1.GateWindow) { w.Duration.Duration = 0 }, "duration must be positive"},
		"negative duration":      {func(w *gatingv1alpha1.GateWindow) { w.Duration.Duration = -time.Hour }, "duration must be positive"},
		"duration over the cap":  {func(w *gatingv1alpha1.GateWindow) { w.Duration.Duration = 8785 * time.Hour }, "at most 8784h"},
		"machine-dependent zone": {func(w *gatingv1alpha1.GateWindow) { w.TimeZone = "Local" }, "IANA"},
		"unknown kind":           {func(w *gatingv1alpha1.GateWindow) { w.Kind = "freeze" }, `"open", "closed"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := friday()
			require.Empty(t, validateGate(t, crd, gateWith(w)), "the unchanged window is valid")
			tc.mutate(&w)
			errs := validateGate(t, crd, gateWith(w))
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tc.errHave)
		})
	}
}

func TestCRDBoundsStatusLists(t *testing.T) {
	crd := loadGateCRD(t)
	g := gateWith(friday())
	g.Status.Held = make([]gatingv1alpha1.HeldObject, gatingv1alpha1.MaxHeld+1)
	for i := range g.Status.Held {
		g.Status.Held[i] = gatingv1alpha1.HeldObject{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}
	}
	g.Status.History = make([]gatingv1alpha1.GateTransition, gatingv1alpha1.MaxHistory+1)
	for i := range g.Status.History {
		g.Status.History[i] = gatingv1alpha1.GateTransition{Time: metav1.Now(), State: gatingv1alpha1.StateOpen, Reason: gatingv1alpha1.ReasonDefault}
	}
	errs := validateGate(t, crd, g).ToAggregate().Error()
	assert.Contains(t, errs, "status.held")
	assert.Contains(t, errs, "status.history")
}
