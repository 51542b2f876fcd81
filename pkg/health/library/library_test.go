package library

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
)

type fixture struct {
	Name   string
	Want   health.Status
	Object map[string]any
}

func loadFixtures(t *testing.T) map[string][]fixture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	all := map[string][]fixture{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(data)
		require.NoError(t, err, f)
		// apimachinery's decoder gives int64 numbers, as for objects read
		// from the API server.
		var cases []any
		require.NoError(t, utiljson.Unmarshal(js, &cases), f)
		for i, raw := range cases {
			c, _ := raw.(map[string]any)
			name, _ := c["name"].(string)
			want, _ := c["want"].(string)
			obj, _ := c["object"].(map[string]any)
			require.True(t, name != "" && want != "" && obj != nil, "%s case %d needs name, want and object", f, i)
			all[filepath.Base(f)] = append(all[filepath.Base(f)], fixture{Name: name, Want: health.Status(want), Object: obj})
		}
	}
	return all
}

func TestBuiltinCompiles(t *testing.T) {
	checks, err := Builtin()
	require.NoError(t, err)
	compiler, err := cel.NewCompiler()
	require.NoError(t, err)
	require.NoError(t, health.CompileAll(compiler, checks))
}

func TestBuiltinCoversAtLeast25Kinds(t *testing.T) {
	kinds := map[string]bool{}
	for _, cases := range loadFixtures(t) {
		for _, c := range cases {
			u := unstructured.Unstructured{Object: c.Object}
			kinds[u.GroupVersionKind().GroupKind().String()] = true
		}
	}
	assert.GreaterOrEqual(t, len(kinds), 25, "distinct kinds with fixtures: %v", kinds)
}

func TestBuiltinFixtures(t *testing.T) {
	checks, err := Builtin()
	require.NoError(t, err)
	resolver, err := health.Resolve(nil, nil, checks)
	require.NoError(t, err)
	compiler, err := cel.NewCompiler()
	require.NoError(t, err)

	covered := map[health.Check]map[health.Status]bool{}
	for file, cases := range loadFixtures(t) {
		for _, c := range cases {
			t.Run(file+"/"+c.Name, func(t *testing.T) {
				u := &unstructured.Unstructured{Object: c.Object}
				m, ok := resolver.Match(u.GroupVersionKind())
				require.True(t, ok, "no built-in check for %s", u.GroupVersionKind())
				cc, err := health.Compile(compiler, m.Check)
				require.NoError(t, err)
				got := cc.Evaluate(u.Object)
				assert.Equal(t, c.Want, got.Status, "message: %s", got.Message)
				if covered[m.Check] == nil {
					covered[m.Check] = map[health.Status]bool{}
				}
				covered[m.Check][got.Status] = true
			})
		}
	}

	// Every entry is exercised for each outcome it can produce.
	for _, check := range checks {
		outcomes := []health.Status{health.Current}
		if check.Current != "true" { // static kinds are healthy once they exist
			outcomes = append(outcomes, health.InProgress)
		}
		if check.Failed != "" {
			outcomes = append(outcomes, health.Failed)
		}
		for _, want := range outcomes {
			assert.True(t, covered[check][want], "no %s fixture for the built-in check for %s", want, check)
		}
	}
}

func TestBuiltinIsACopy(t *testing.T) {
	a, err := Builtin()
	require.NoError(t, err)
	a[0].Current = "false"
	b, err := Builtin()
	require.NoError(t, err)
	assert.NotEqual(t, "false", b[0].Current)
}

func TestParseUserLibrary(t *testing.T) {
	checks, err := Parse([]byte(`
- apiVersion: example.org/v1
  current: &ready "status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')"
- apiVersion: example.org/v1
  kind: Widget
  failed: "status.?phase.orValue('') == 'Broken'"
  current: *ready
`))
	require.NoError(t, err)
	require.Len(t, checks, 2)
	assert.Equal(t, health.Check{APIVersion: "example.org/v1", Kind: "Widget",
		Failed:  "status.?phase.orValue('') == 'Broken'",
		Current: "status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')"}, checks[1])
}

func TestParseRejectsBadLibraries(t *testing.T) {
	cases := map[string]string{
		"unknown field":     "- {apiVersion: example.org/v1, kind: Widget, current: 'true', healthy: 'true'}",
		"not a list":        "apiVersion: example.org/v1",
		"missing current":   "- {apiVersion: example.org/v1, kind: Widget, failed: 'true'}",
		"missing version":   "- {apiVersion: example.org, kind: Widget, current: 'true'}",
		"duplicate kind":    "- {apiVersion: example.org/v1, kind: Widget, current: 'true'}\n- {apiVersion: example.org/v1, kind: Widget, current: 'false'}",
		"duplicate group":   "- {apiVersion: example.org/v1, current: 'true'}\n- {apiVersion: example.org/v2, current: 'false'}",
		"core group-wide":   "- {apiVersion: v1, current: 'true'}",
		"invalid yaml":      "- {apiVersion: [",
		"empty api version": "- {kind: Widget, current: 'true'}",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc))
			assert.Error(t, err)
		})
	}
}
