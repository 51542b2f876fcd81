package health_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/health/library"
)

// object decodes YAML the way objects arrive from the API server (int64 numbers).
func object(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(js))
	return u
}

func compiler(t testing.TB, opts ...cel.Option) *cel.Compiler {
	t.Helper()
	c, err := cel.NewCompiler(opts...)
	require.NoError(t, err)
	return c
}

func builtin(t testing.TB) []health.Check {
	t.Helper()
	checks, err := library.Builtin()
	require.NoError(t, err)
	return checks
}

func evaluator(t testing.TB, spec, user, builtin []health.Check) *health.Evaluator {
	t.Helper()
	r, err := health.Resolve(spec, user, builtin)
	require.NoError(t, err)
	return health.NewEvaluator(compiler(t), r)
}
