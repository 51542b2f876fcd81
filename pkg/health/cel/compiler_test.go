package cel

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestCompiler(t *testing.T, opts ...Option) *Compiler {
	t.Helper()
	c, err := NewCompiler(opts...)
	require.NoError(t, err)
	return c
}

func eval(t *testing.T, c *Compiler, expr string, obj map[string]any) (bool, error) {
	t.Helper()
	prg, err := c.Compile(expr)
	require.NoError(t, err)
	return prg.Eval(c.NewActivation(obj))
}

var certificate = map[string]any{
	"apiVersion": "cert-manager.io/v1",
	"kind":       "Certificate",
	"metadata":   map[string]any{"name": "web", "generation": int64(2)},
	"spec":       map[string]any{"secretName": "web-tls", "dnsNames": []any{"web.example.com"}},
	"status": map[string]any{
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "observedGeneration": int64(2)},
		},
	},
}

func TestBindsTopLevelFieldsAndSelf(t *testing.T) {
	c := newTestCompiler(t)
	for _, expr := range []string{
		"status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation)",
		"self.status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')",
		"has(self.status) && has(status.conditions)",
		"apiVersion == 'cert-manager.io/v1' && kind == self.kind",
		"spec.secretName == 'web-tls'",
	} {
		t.Run(expr, func(t *testing.T) {
			got, err := eval(t, c, expr, certificate)
			require.NoError(t, err)
			assert.True(t, got)
		})
	}
}

func TestMissingTopLevelFieldIsAbsentNotAnError(t *testing.T) {
	c := newTestCompiler(t)
	obj := map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "metadata": map[string]any{"name": "c"}}
	cases := map[string]bool{
		"has(self.status)":                     false,
		"has(status.conditions)":               false,
		"status.?conditions.orValue([]) == []": true,
		"!has(self.spec)":                      true,
	}
	for expr, want := range cases {
		t.Run(expr, func(t *testing.T) {
			got, err := eval(t, c, expr, obj)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
	_, err := eval(t, c, "status.conditions.exists(e, e.type == 'Ready')", obj)
	assert.ErrorContains(t, err, "conditions", "a missing key below a top-level field still fails")
}

func TestLibrariesAreEnabled(t *testing.T) {
	c := newTestCompiler(t)
	for _, expr := range []string{
		"[1, 2, 3].isSorted() && [1, 2].sum() == 3",                       // k8s lists
		"'v1.2.3'.matches('^v[0-9.]+$') && 'a1b'.find('[0-9]') == '1'",    // k8s regex
		"url('https://example.com/x').getHost() == 'example.com'",         // k8s urls
		"quantity('1Gi').isGreaterThan(quantity('512Mi'))",                // k8s quantity
		"ip('10.0.0.1').family() == 4",                                    // k8s IP
		"cidr('10.0.0.0/8').containsIP('10.1.2.3')",                       // k8s CIDR
		"semver('1.2.3').isLessThan(semver('1.10.0'))",                    // k8s semver
		"format.dns1123Label().validate('web').hasValue() == false",       // k8s format
		"'Hello'.lowerAscii() == 'hello' && 'a,b'.split(',').size() == 2", // ext strings
		"sets.contains([1, 2, 3], [2])",                                   // ext sets
		"base64.encode(b'hi') == 'aGk='",                                  // ext encoders
		"optional.of(1).hasValue() && self.?nope.orValue(2) == 2",         // optional types
	} {
		t.Run(expr, func(t *testing.T) {
			got, err := eval(t, c, expr, certificate)
			require.NoError(t, err)
			assert.True(t, got)
		})
	}
}

func TestCompileErrorNamesExpressionAndCause(t *testing.T) {
	c := newTestCompiler(t)
	cases := map[string]string{
		"status.conditions.exists(e, e.type == 'Ready'": "Syntax error",
		"stauts.conditions.size() > 0":                  "undeclared reference to 'stauts'",
		"status.conditions.size()":                      "must evaluate to a bool",
		"'a' + 1 == 'a1'":                               "no matching overload",
		"status.name.matches('[')":                      "invalid matches argument",
		"":                                              "empty",
	}
	for expr, want := range cases {
		t.Run(expr, func(t *testing.T) {
			_, err := c.Compile(expr)
			var ce *CompileError
			require.True(t, errors.As(err, &ce), "got %v", err)
			assert.Equal(t, expr, ce.Expression)
			assert.Contains(t, ce.Message, want)
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", expr))
		})
	}
}

func TestRuntimeNonBoolIsAnError(t *testing.T) {
	c := newTestCompiler(t)
	_, err := eval(t, c, "spec.secretName", certificate)
	assert.ErrorIs(t, err, ErrNotBool)
}

func TestCostLimitStopsExpensiveExpression(t *testing.T) {
	// Quadratic in the list size; the list itself is data from the object.
	expr := "spec.items.all(a, spec.items.all(b, a + b >= 0))"
	items := make([]any, 200)
	for i := range items {
		items[i] = int64(i)
	}
	obj := map[string]any{"spec": map[string]any{"items": items}}

	limited := newTestCompiler(t, WithCostLimit(10_000))
	_, err := eval(t, limited, expr, obj)
	assert.ErrorContains(t, err, "cost limit exceeded")

	generous := newTestCompiler(t, WithCostLimit(1<<40))
	got, err := eval(t, generous, expr, obj)
	require.NoError(t, err, "the same expression completes under a higher limit")
	assert.True(t, got)
}

func TestExpressionSizeLimit(t *testing.T) {
	c := newTestCompiler(t, WithMaxExpressionSize(20))
	_, err := c.Compile("has(self.status) && has(self.spec)")
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Message, "size")
}

func TestWithVariablesDeclaresOtherTopLevelFields(t *testing.T) {
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"ready": "yes"}}
	_, err := newTestCompiler(t).Compile("data.ready == 'yes'")
	require.Error(t, err, "data is not declared by default")
	got, err := eval(t, newTestCompiler(t), "self.data.ready == 'yes'", cm)
	require.NoError(t, err)
	assert.True(t, got, "every top-level field is reachable through self")

	c := newTestCompiler(t, WithVariables(append(DefaultVariables, "data")...))
	got, err = eval(t, c, "data.ready == 'yes'", cm)
	require.NoError(t, err)
	assert.True(t, got)

	_, err = NewCompiler(WithVariables("self"))
	assert.ErrorContains(t, err, "reserved")
}

func TestCacheReusesProgramsAndBoundsSize(t *testing.T) {
	c := newTestCompiler(t, WithCacheSize(2))
	a1, err := c.Compile("has(self.a)")
	require.NoError(t, err)
	a2, err := c.Compile("has(self.a)")
	require.NoError(t, err)
	assert.Same(t, a1, a2)

	_, _ = c.Compile("has(self.b)")
	_, _ = c.Compile("has(self.c)") // evicts a, the least recently used
	assert.Equal(t, 2, c.CachedExpressions())
	a3, err := c.Compile("has(self.a)")
	require.NoError(t, err)
	assert.NotSame(t, a1, a3)
}

func TestCacheIsRecentlyUsedNotFirstIn(t *testing.T) {
	c := newTestCompiler(t, WithCacheSize(2))
	a1, _ := c.Compile("has(self.a)")
	_, _ = c.Compile("has(self.b)")
	_, _ = c.Compile("has(self.a)") // a is now the most recent
	_, _ = c.Compile("has(self.c)") // evicts b
	a2, _ := c.Compile("has(self.a)")
	assert.Same(t, a1, a2)
}

func TestCacheKeepsCompileErrors(t *testing.T) {
	c := newTestCompiler(t)
	_, err1 := c.Compile("stauts.ready")
	_, err2 := c.Compile("stauts.ready")
	require.Error(t, err1)
	assert.Same(t, err1, err2, "a bad expression is compiled once, not on every reconcile")
}

func TestCacheDisabledCompilesEachTime(t *testing.T) {
	c := newTestCompiler(t, WithCacheSize(0))
	a1, _ := c.Compile("has(self.a)")
	a2, _ := c.Compile("has(self.a)")
	assert.NotSame(t, a1, a2)
	assert.Zero(t, c.CachedExpressions())
	_, err := NewCompiler(WithCacheSize(-1))
	assert.Error(t, err)
}

func TestCompileIsConcurrencySafe(t *testing.T) {
	c := newTestCompiler(t, WithCacheSize(8))
	var wg sync.WaitGroup
	progs := make([]*Program, 64)
	for i := range progs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 16 distinct expressions through an 8-entry cache: hits, misses and evictions race.
			p, err := c.Compile(fmt.Sprintf("has(self.f%d)", i%16))
			if err == nil {
				if _, err := p.Eval(c.NewActivation(certificate)); err == nil {
					progs[i] = p
				}
			}
		}()
	}
	wg.Wait()
	for i, p := range progs {
		require.NotNil(t, p, "goroutine %d", i)
		assert.Equal(t, fmt.Sprintf("has(self.f%d)", i%16), p.Expression())
	}
}
