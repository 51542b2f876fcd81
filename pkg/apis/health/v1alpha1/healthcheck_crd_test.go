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

	healthv1alpha1 "github.com/sluicehq/sluice/pkg/apis/health/v1alpha1"
)

// loadCRD reads the generated CRD and validates it as the API server does on create, which
// compiles every CEL rule and checks its estimated cost.
func loadCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "crds", "health.sluice.dev_healthchecks.yaml"))
	require.NoError(t, err, "run make generate")
	var v1crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(data, &v1crd))
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1crd)
	var crd apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1crd, &crd, nil))
	require.Empty(t, crdvalidation.ValidateCustomResourceDefinition(context.Background(), &crd))
	return &crd
}

// validate runs the schema and the CEL rules of the CRD over hc, as the API server does.
func validate(t *testing.T, crd *apiextensions.CustomResourceDefinition, hc *healthv1alpha1.HealthCheck) field.ErrorList {
	t.Helper()
	props := crd.Spec.Validation.OpenAPIV3Schema
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hc)
	require.NoError(t, err)
	obj["apiVersion"], obj["kind"] = healthv1alpha1.SchemeGroupVersion.String(), "HealthCheck"
	schemaValidator, _, err := validation.NewSchemaValidator(props)
	require.NoError(t, err)
	errs := validation.ValidateCustomResource(nil, obj, schemaValidator)
	structural, err := structuralschema.NewStructural(props)
	require.NoError(t, err)
	celErrs, _ := cel.NewValidator(structural, true, celconfig.PerCallLimit).
		Validate(context.Background(), nil, structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

const sha = "0123456789abcdef0123456789abcdef01234567"

func valid() *healthv1alpha1.HealthCheck {
	return &healthv1alpha1.HealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: "flux-system"},
		Spec: healthv1alpha1.HealthCheckSpec{
			Targets: []healthv1alpha1.Target{
				{Kustomization: &healthv1alpha1.SourceReference{Name: "apps"}},
				{Object: &healthv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "web"}},
				{Selector: &healthv1alpha1.KindSelector{APIVersion: "cert-manager.io/v1", Kind: "Certificate",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
				{Application: &healthv1alpha1.SourceReference{Name: "guestbook", Namespace: "argocd"}},
			},
			HealthCheckExprs: []healthv1alpha1.CustomHealthCheck{{APIVersion: "example.org/v1", Current: "has(self.status)"}},
			Timeout:          &metav1.Duration{Duration: 10 * time.Minute},
			SoakTime:         &metav1.Duration{Duration: 5 * time.Minute},
			CommitStatus: &healthv1alpha1.CommitStatusPublication{
				Key: "health-staging", RepositoryRef: healthv1alpha1.RepositoryReference{Name: "app"},
				Revision: healthv1alpha1.RevisionSource{Kustomization: &healthv1alpha1.SourceReference{Name: "apps"}},
				URL:      "https://grafana.example.com/d/staging",
			},
		},
	}
}

func TestCRDAcceptsAFullHealthCheck(t *testing.T) {
	assert.Empty(t, validate(t, loadCRD(t), valid()))
}

func TestCRDRejectsBadSpecs(t *testing.T) {
	crd := loadCRD(t)
	cases := map[string]struct {
		mutate func(*healthv1alpha1.HealthCheck)
		want   string
	}{
		"no targets": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Targets = nil }, "targets"},
		"a target naming two things": {func(hc *healthv1alpha1.HealthCheck) {
			hc.Spec.Targets[0].Application = &healthv1alpha1.SourceReference{Name: "x"}
		}, "exactly one of object, selector, kustomization or application"},
		"an empty target": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Targets[0] = healthv1alpha1.Target{} },
			"exactly one of object, selector, kustomization or application"},
		"two revision sources": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.Revision.Fixed = sha },
			"exactly one of kustomization, application or fixed"},
		"no revision source": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.Revision = healthv1alpha1.RevisionSource{} },
			"exactly one of kustomization, application or fixed"},
		"short fixed commit": {func(hc *healthv1alpha1.HealthCheck) {
			hc.Spec.CommitStatus.Revision = healthv1alpha1.RevisionSource{Fixed: "abc1234"}
		}, "fixed"},
		"zero timeout":     {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Timeout.Duration = 0 }, "timeout must be positive"},
		"negative soak":    {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.SoakTime.Duration = -time.Minute }, "soakTime must be between"},
		"key not a label":  {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.Key = "health staging" }, "key"},
		"ftp url":          {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.URL = "ftp://example.com" }, "http or https"},
		"no current":       {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.HealthCheckExprs[0].Current = "" }, "current"},
		"object with name": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Targets[1].Object.Name = "" }, "name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			hc := valid()
			tc.mutate(hc)
			errs := validate(t, crd, hc)
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tc.want)
		})
	}
}

func TestCRDBoundsTheResourceList(t *testing.T) {
	hc := valid()
	hc.Status.Resources = make([]healthv1alpha1.ResourceHealth, healthv1alpha1.MaxResources+1)
	for i := range hc.Status.Resources {
		hc.Status.Resources[i] = healthv1alpha1.ResourceHealth{APIVersion: "v1", Kind: "ConfigMap", Name: "x", Status: healthv1alpha1.StatusCurrent}
	}
	assert.Contains(t, validate(t, loadCRD(t), hc).ToAggregate().Error(), "status.resources")
}
