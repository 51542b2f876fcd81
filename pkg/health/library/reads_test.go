package library

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// A watch keeps only what Evaluator.Reads lists: every built-in check gives each fixture the
// same health, message included, from the projected object as from the whole one.
func TestBuiltinChecksReadOnlyWhatTheyList(t *testing.T) {
	checks, err := Builtin()
	require.NoError(t, err)
	resolver, err := health.Resolve(nil, nil, checks)
	require.NoError(t, err)
	compiler, err := cel.NewCompiler()
	require.NoError(t, err)
	e := health.NewEvaluator(compiler, resolver)
	projected := 0
	for file, cases := range loadFixtures(t) {
		for _, c := range cases {
			whole := &unstructured.Unstructured{Object: c.Object}
			keep := dynamicwatch.FieldsOf(e.Reads(whole.GroupVersionKind())...)
			out, err := dynamicwatch.Project(keep)(whole.DeepCopy())
			require.NoError(t, err)
			part := out.(*unstructured.Unstructured)
			if _, hasSpec := whole.Object["spec"]; hasSpec && keep != nil {
				projected++
			}
			assert.Equal(t, e.Evaluate(whole), e.Evaluate(part), "%s: %s", file, c.Name)
		}
	}
	assert.Greater(t, projected, 50, "most fixtures lose their spec, or part of it")
}
