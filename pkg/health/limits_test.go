package health_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/health"
)

// A hostile or careless expression stops, with the default limit, and the
// object is Unknown with a message that says why; its other objects and
// checks are unaffected.
func TestHostileExpressionsGiveUnknown(t *testing.T) {
	items := make([]any, 1000)
	for i := range items {
		items[i] = int64(i)
	}
	cases := map[string]struct {
		expr string
		spec map[string]any
		want string
	}{
		"nested comprehension 1000x1000": {"spec.items.all(a, spec.items.all(b, a + b >= 0))",
			map[string]any{"items": items}, "cost limit exceeded: the expression did more than 1000000 units of work"},
		"string blow-up": {"'aaaaaaaaaa'" + strings.Repeat(".replace('a', 'aaaaaaaaaa')", 10) + " == ''",
			map[string]any{}, "cost limit exceeded: replace would build a string of"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			check := health.Check{APIVersion: "example.org/v1", Kind: "Widget", Current: c.expr}
			r, err := health.Resolve([]health.Check{check}, nil, nil)
			require.NoError(t, err)
			obj := object(t, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {phase: Ready}}`)
			obj.Object["spec"] = c.spec
			got := health.NewEvaluator(compiler(t), r).Evaluate(obj)
			assert.Equal(t, health.Unknown, got.Status)
			assert.Contains(t, got.Message, "evaluating the current expression of the check for example.org/v1 Widget")
			assert.Contains(t, got.Message, c.want)
		})
	}
}
