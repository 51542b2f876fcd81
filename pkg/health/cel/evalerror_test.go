package cel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A runtime error never carries a value of the object: an expression may read data its author
// may not, and its message would then leak that data through the status.
func TestEvalErrorsQuoteNoValue(t *testing.T) {
	const secret = "s3cr3t-value-42"
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"token": secret, "n": "7"}}
	cases := map[string]struct{ expr, kind string }{
		"a conversion of a value": {`int(self.data.token) > 0`, "cannot be converted"},
		"a computed key":          {`self.data[self.data.token] == "x"`, "no such key"},
		"a key from the source":   {`self.data.missing == "x"`, "no such key"},
		"an overload":             {`dyn(self.data.token) + 1 > 0`, "no function or operator"},
		"a division by zero":      {`1 / (int(self.data.n) - 7) > 0`, "division by zero"},
		"a duration":              {`duration(self.data.token) > duration('1s')`, ""},
		"a timestamp":             {`timestamp(self.data.token) > timestamp('2020-01-01T00:00:00Z')`, ""},
		"a regex from the data":   {`"a".matches(self.data.token + "[")`, ""},
	}
	c, err := NewCompiler()
	require.NoError(t, err)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := c.Compile(tc.expr)
			require.NoError(t, err)
			act := c.NewActivation(obj)
			defer act.Release()
			_, err = p.Eval(act)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "s3cr3t")
			assert.NotContains(t, err.Error(), "42")
			assert.Contains(t, err.Error(), tc.kind)
			var ee *EvalError
			require.ErrorAs(t, err, &ee)
		})
	}
}

// The position says where the failing step is, so the author can still find it.
func TestEvalErrorsSayWhere(t *testing.T) {
	c, err := NewCompiler()
	require.NoError(t, err)
	p, err := c.Compile("self.data.a == 'x' ||\n  int(self.data.b) > 1")
	require.NoError(t, err)
	act := c.NewActivation(map[string]any{"data": map[string]any{"a": "y", "b": "not-a-number"}})
	defer act.Release()
	_, err = p.Eval(act)
	var ee *EvalError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.Line, err.Error())
	assert.NotContains(t, err.Error(), "not-a-number")
}
