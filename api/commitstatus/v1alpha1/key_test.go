package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestKeyForNameIsALabelValue(t *testing.T) {
	for name, want := range map[string]string{
		"health-staging":                  "health-staging",
		"ci/kubeconform":                  "ci-kubeconform",
		"continuous-integration/drone/pr": "continuous-integration-drone-pr",
		"Build & Test (ubuntu)":           "Build-Test-ubuntu",
		"/lint/":                          "lint",
		"pipeline/nightly":                "pipeline-nightly",
		"ünïcode":                         "n-code",
		strings.Repeat("a", 70):           strings.Repeat("a", 63),
		"???":                             "",
	} {
		got := KeyForName(name)
		if got != want {
			t.Errorf("KeyForName(%q) = %q, want %q", name, got, want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("KeyForName(%q) = %q is not a label value: %v", name, got, errs)
		}
	}
}
