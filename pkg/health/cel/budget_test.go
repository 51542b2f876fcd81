package cel

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/cel-go/interpreter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ints(n int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = int64(i)
	}
	return items
}

func strs(n int, s string) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = s
	}
	return items
}

// stopped asserts that expr, on an object with spec, stops with the cost
// limit error and a message containing want.
func stopped(t *testing.T, c *Compiler, expr string, spec map[string]any, want string) {
	t.Helper()
	_, err := eval(t, c, expr, map[string]any{"spec": spec})
	var cancelled interpreter.EvalCancelledError
	require.True(t, errors.As(err, &cancelled), "%q: got %v", expr, err)
	assert.Equal(t, interpreter.CostLimitExceeded, cancelled.Cause)
	assert.Contains(t, err.Error(), "cost limit exceeded")
	assert.Contains(t, err.Error(), want)
}

func TestHostileExpressionsStop(t *testing.T) {
	c := newTestCompiler(t)
	fold := func(n int) string {
		return strings.Repeat(".replace('a', 'aaaaaaaaaa')", n)
	}
	cases := []struct {
		name, expr string
		spec       map[string]any
		want       string
	}{
		{"nested comprehension 1000x1000", "spec.items.all(a, spec.items.all(b, a + b >= 0))",
			map[string]any{"items": ints(1000)}, "units of work"},
		{"three nested comprehensions", "spec.items.exists(a, spec.items.exists(b, spec.items.exists(c, a + b + c < 0)))",
			map[string]any{"items": ints(200)}, "units of work"},
		{"string blow-up from literals", "'aaaaaaaaaa'" + fold(10) + " == ''",
			map[string]any{}, "replace would build a string of"},
		{"string blow-up from the object", "spec.s.replace('a', spec.s).replace('a', spec.s) == ''",
			map[string]any{"s": strings.Repeat("a", 1000)}, "replace would build a string of 1000000000 bytes"},
		{"replace of the empty string", "spec.s.replace('', spec.s) == ''",
			map[string]any{"s": strings.Repeat("a", 2000)}, "replace would build"},
		{"concatenation doubling in a comprehension", "spec.items.all(i, (spec.s + spec.s + spec.s + spec.s).size() > 0)",
			map[string]any{"items": ints(1000), "s": strings.Repeat("a", 100_000)}, "units of work"},
		{"join with a long separator", "spec.words.join(spec.s).size() > 0",
			map[string]any{"words": strs(10_000, "w"), "s": strings.Repeat("-", 1000)}, "join would build"},
		{"format repeating a long string", "'" + strings.Repeat("%s", 200) + "'.format([" + strings.Repeat("spec.s, ", 199) + "spec.s]) == ''",
			map[string]any{"s": strings.Repeat("a", 100_000)}, "format would build"},
		{"sets of two long lists", "sets.intersects(spec.a, spec.b)",
			map[string]any{"a": ints(1000), "b": ints(1000)}, "would compare 1000000 pairs"},
		{"a long literal list in a loop", "spec.items.all(i, i in [" + strings.Repeat("i, ", 2000) + "i])",
			map[string]any{"items": ints(1000)}, "units of work"},
		{"reading a large string over and over", "spec.items.all(i, spec.s.matches('^a*$'))",
			map[string]any{"items": ints(1000), "s": strings.Repeat("a", 500_000)}, "units of work"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stopped(t, c, tc.expr, tc.spec, tc.want)
		})
	}
}

func TestWorkWithinTheLimitCompletes(t *testing.T) {
	c := newTestCompiler(t)
	for expr, spec := range map[string]map[string]any{
		"spec.items.all(i, i >= 0)":                                {"items": ints(10_000)},
		"spec.items.all(a, spec.items.exists(b, b == a))":          {"items": ints(100)},
		"spec.s.replace('a', 'bb').size() == 200000":               {"s": strings.Repeat("a", 100_000)},
		"spec.words.join(', ').size() == 5 * 1000 - 2":             {"words": strs(1000, "abc")},
		"sets.contains(spec.a, spec.b)":                            {"a": ints(400), "b": ints(400)},
		"'%s-%s'.format([spec.s, spec.s]).size() == 2 * 10000 + 1": {"s": strings.Repeat("a", 10_000)},
	} {
		got, err := eval(t, c, expr, map[string]any{"spec": spec})
		require.NoError(t, err, expr)
		assert.True(t, got, expr)
	}
}

// The budget counts work, not time: the same evaluation stops at the same
// point whatever the load, and a limit just above its cost lets it finish.
func TestCostLimitIsDeterministic(t *testing.T) {
	expr := "spec.items.all(i, i >= 0)"
	obj := map[string]any{"spec": map[string]any{"items": ints(1000)}}
	prg, err := newTestCompiler(t).Compile(expr)
	require.NoError(t, err)
	act := newTestCompiler(t).NewActivation(obj)
	_, err = prg.Eval(act)
	require.NoError(t, err)
	cost := act.budget.spent
	act.Release()
	require.Greater(t, cost, uint64(1000), "each of the 1000 steps costs at least a unit")

	for range 3 {
		_, err := eval(t, newTestCompiler(t, WithCostLimit(cost)), expr, obj)
		require.NoError(t, err, "a limit equal to the cost lets it finish")
		_, err = eval(t, newTestCompiler(t, WithCostLimit(cost-1)), expr, obj)
		require.ErrorContains(t, err, "cost limit exceeded", "one unit less stops it")
	}
	_, err = NewCompiler(WithCostLimit(0))
	assert.Error(t, err)
}

// A guard refusing a call that only literals feed stops the evaluation
// too: nothing escapes to the caller as a panic, at compile or run time.
func TestConstantBlowUpIsAnEvaluationError(t *testing.T) {
	c := newTestCompiler(t)
	expr := "string(b'" + strings.Repeat("a", 200) + "').replace('a', '" + strings.Repeat("b", 100) + "').replace('b', '" + strings.Repeat("c", 100) + "') == ''"
	prg, err := c.Compile(expr)
	require.NoError(t, err)
	_, err = prg.Eval(c.NewActivation(map[string]any{}))
	assert.ErrorContains(t, err, "replace would build")
}
