// Package crdvalidate checks objects against a generated CRD offline, the way the API server does
// on create: the OpenAPI schema first, then every x-kubernetes-validations CEL rule within the
// server's cost budget. It lets API tests table-test validation without a control plane.
package crdvalidate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/testenv"
)

// CRD is a generated CRD converted to the internal form the API server validates with.
type CRD struct {
	crd *apiextensions.CustomResourceDefinition
}

// Load reads api/crds/<file> and validates the CRD itself as the API server does on create, which
// compiles every CEL rule and checks its estimated cost.
func Load(file string) (*CRD, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "api", "crds", file))
	if err != nil {
		return nil, fmt.Errorf("%w (run make generate)", err)
	}
	var v1crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1crd); err != nil {
		return nil, err
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1crd)
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1crd, &crd, nil); err != nil {
		return nil, err
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &crd); len(errs) > 0 {
		return nil, fmt.Errorf("the API server would refuse %s: %v", file, errs.ToAggregate())
	}
	return &CRD{crd: &crd}, nil
}

// Validate runs the schema and the CEL rules over obj, whose apiVersion and kind are set from the
// CRD. It returns what the API server would refuse.
func (c *CRD) Validate(obj runtime.Object) (field.ErrorList, error) {
	// With a single version, conversion to the internal type moves the schema up to spec.validation.
	props := c.crd.Spec.Validation.OpenAPIV3Schema
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u["apiVersion"] = c.crd.Spec.Group + "/" + c.crd.Spec.Versions[0].Name
	u["kind"] = c.crd.Spec.Names.Kind

	schemaValidator, _, err := validation.NewSchemaValidator(props)
	if err != nil {
		return nil, err
	}
	errs := validation.ValidateCustomResource(nil, u, schemaValidator)
	structural, err := structuralschema.NewStructural(props)
	if err != nil {
		return nil, err
	}
	celErrs, _ := cel.NewValidator(structural, true, celconfig.PerCallLimit).
		Validate(context.Background(), nil, structural, u, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...), nil
}
