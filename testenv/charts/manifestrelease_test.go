package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// rfcTests are RFC-0002's chart values (its "Helm chart changes" section) for a release the
// chart renders: two test definitions, one selected and one excluded, and an external ConfigMap.
type rfcTests struct {
	Enable          bool                `json:"enable"`
	IgnoreFailures  bool                `json:"ignoreFailures"`
	Filters         []map[string]any    `json:"filters"`
	TestDefinitions []map[string]string `json:"testDefinitions"`
	TestsConfigMaps []map[string]string `json:"testsConfigMaps"`
}

func exampleTests() rfcTests {
	return rfcTests{
		Enable:         true,
		IgnoreFailures: true,
		Filters: []map[string]any{
			{"name": "test-flux-components-v2.3.x", "exclude": false},
			{"name": "test-flux-components-v2.2.x", "exclude": true},
		},
		TestDefinitions: []map[string]string{
			{"name": "test-flux-components-v2.3.x", "yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: smoke-v23\n"},
			{"name": "test-flux-components-v2.2.x", "yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: smoke-v22\n"},
		},
		TestsConfigMaps: []map[string]string{{"name": "team-tests", "key": "smoke.yaml"}, {"name": "more-tests"}},
	}
}

// valuesFile writes values as a values file and returns the flags that pass it to helm.
func valuesFile(t *testing.T, values map[string]any) []string {
	t.Helper()
	out, err := yaml.Marshal(values)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(file, out, 0o600))
	return []string{"--values", file}
}

// The chart renders RFC-0002's tests: values into the ManifestRelease it renders: each test
// definition a ConfigMap named after it (key test-yaml, in the release's namespace, labelled as
// the chart's objects), referenced in spec.test.definitionsFrom in order and followed by
// tests.testsConfigMaps; filters, enable and ignoreFailures as given. Off, nothing is rendered.
func TestChartRendersTheReleaseAndItsTests(t *testing.T) {
	helm := renderer(t)
	dir := chartDir(t, "rollback-controller")
	ctx := context.Background()

	out, err := helm.Template(ctx, "platform", "sluice-system", dir, nil)
	require.NoError(t, err)
	objs, err := Objects(out)
	require.NoError(t, err)
	assert.Empty(t, OfKind(objs, "ManifestRelease"), "off by default")
	assert.Empty(t, OfKind(objs, "ConfigMap"), "no test definitions by default")

	tests := exampleTests()
	values := map[string]any{
		"release": map[string]any{"enabled": true, "namespace": "team-a", "serviceAccountName": "releaser", "version": "v2.3.0",
			"source": map[string]any{"configMaps": []map[string]string{{"name": "flux-v2.3.0"}}}, "timeout": "2m"},
		"tests":            tests,
		"manifestReleases": map[string]any{"tenantNamespaces": []string{"team-a"}},
	}
	out, err = helm.Template(ctx, "platform", "sluice-system", dir, valuesFile(t, values))
	require.NoError(t, err)
	objs, err = Objects(out)
	require.NoError(t, err)

	configMaps := OfKind(objs, "ConfigMap")
	require.Len(t, configMaps, len(tests.TestDefinitions))
	var wantRefs []any
	for i, def := range tests.TestDefinitions {
		cm := configMaps[i]
		assert.Equal(t, def["name"], cm.GetName())
		assert.Equal(t, "team-a", cm.GetNamespace(), "in the release's namespace")
		assert.Equal(t, "platform", cm.GetLabels()["app.kubernetes.io/instance"], "labelled as the chart's objects")
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		assert.Equal(t, map[string]string{"test-yaml": def["yaml"]}, data)
		wantRefs = append(wantRefs, map[string]any{"kind": "ConfigMap", "name": def["name"], "key": "test-yaml"})
	}
	for _, ext := range tests.TestsConfigMaps {
		key := ext["key"]
		if key == "" {
			key = "test-yaml"
		}
		wantRefs = append(wantRefs, map[string]any{"kind": "ConfigMap", "name": ext["name"], "key": key})
	}

	releases := OfKind(objs, "ManifestRelease")
	require.Len(t, releases, 1)
	mr := releases[0]
	assert.Equal(t, "platform-rollback-controller", mr.GetName(), "named after the chart's full name")
	assert.Equal(t, "team-a", mr.GetNamespace())
	spec, _, _ := unstructured.NestedMap(mr.Object, "spec")
	assert.Equal(t, "releaser", spec["serviceAccountName"])
	assert.Equal(t, "v2.3.0", spec["version"])
	assert.Equal(t, "2m", spec["timeout"])
	assert.Equal(t, map[string]any{"configMaps": []any{map[string]any{"name": "flux-v2.3.0"}}}, spec["source"])
	test, _, _ := unstructured.NestedMap(spec, "test")
	assert.Equal(t, tests.Enable, test["enable"])
	assert.Equal(t, tests.IgnoreFailures, test["ignoreFailures"])
	assert.Equal(t, wantRefs, test["definitionsFrom"])
	var wantFilters []any
	for _, f := range tests.Filters {
		wantFilters = append(wantFilters, f)
	}
	assert.Equal(t, wantFilters, test["filters"])
}

// The schema and the template refuse release and tests values that cannot work, naming them.
func TestChartRefusesBadReleaseValues(t *testing.T) {
	helm := renderer(t)
	dir := chartDir(t, "rollback-controller")
	source := "release.source.configMaps[0].name=web-v1"
	for field, set := range map[string][]string{
		"source":          {"release.enabled=true"},
		"/release/source": {"release.enabled=true", source, "release.source.oci.repository=ghcr.io/x/y", "release.source.oci.tag=v1"},
		"exclude":         {"release.enabled=true", source, "tests.filters[0].name=smoke", "tests.filters[0].exclude=maybe"},
		"yaml":            {"release.enabled=true", source, "tests.testDefinitions[0].name=smoke"},
		"/tests/testDefinitions/0/name": {"release.enabled=true", source, "tests.testDefinitions[0].name=Smoke_Tests",
			"tests.testDefinitions[0].yaml=kind: Job"},
		"testsConfigMaps": {"release.enabled=true", source, "tests.testsConfigMaps[0].key=test-yaml"},
		"historyLimit":    {"release.enabled=true", source, "release.historyLimit=0"},
		"interval":        {"release.enabled=true", source, "release.interval=often"},
	} {
		assertRefused(t, helm, dir, field, set...)
	}
	// helm lint only logs a template's fail, so these are refused where they matter: rendering.
	for message, set := range map[string][]string{
		"set release.enabled": {"tests.enable=true"},
		"release.namespace sluice-system must be listed in manifestReleases.tenantNamespaces": {"release.enabled=true", source},
		"at most 32 ConfigMaps": append([]string{"release.enabled=true", source, "manifestReleases.tenantNamespaces={sluice-system}"}, manyConfigMaps(33)...),
	} {
		_, err := helm.Template(context.Background(), "platform", "sluice-system", dir, nil, set...)
		if assert.Error(t, err, "%v is refused", set) {
			assert.Contains(t, err.Error(), message)
		}
	}
}

// manyConfigMaps names n test ConfigMaps, half of them definitions and half external, each list
// within the schema's bound.
func manyConfigMaps(n int) []string {
	var set []string
	for i := range n / 2 {
		set = append(set, fmt.Sprintf("tests.testDefinitions[%d].name=tests-%d", i, i), fmt.Sprintf("tests.testDefinitions[%d].yaml=kind: Job", i))
	}
	for i := range n - n/2 {
		set = append(set, fmt.Sprintf("tests.testsConfigMaps[%d].name=external-%d", i, i))
	}
	return set
}
