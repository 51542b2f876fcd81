package cel

import (
	"errors"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// badLiterals are expressions whose literal arguments cel-go's validators
// refuse, the call placed where a walk could miss it: in a comprehension, as
// a member call, under a logical operator.
var badLiterals = []string{
	"duration('1x') > duration('1s')",
	"status.conditions.exists(c, timestamp(c.lastTransitionTime) > timestamp('yesterday'))",
	"status.conditions.exists(c, c.message.matches('['))",
	"spec.ready || status.phase.matches('(')",
	"'%d'.format(['seven']) == '7'",
	"'%s %s'.format([status.phase]) == 'x'",
	"status.conditions.all(c, c.type != '' && '%s-%s'.format([c.type, c.status, c.reason]) != '')",
}

// TestLiteralErrorsAreCelGosOwn compiles each bad literal with Sluice and
// with cel-go's validators as cel-go declares them: the same errors, at the
// same places.
func TestLiteralErrorsAreCelGosOwn(t *testing.T) {
	c := newTestCompiler(t)
	reference, err := celgo.NewEnv(
		celgo.Variable("spec", celgo.DynType), celgo.Variable("status", celgo.DynType),
		celgo.OptionalTypes(), ext.Strings(ext.StringsVersion(stringsVersion)),
		celgo.ASTValidators(celgo.ValidateDurationLiterals(), celgo.ValidateTimestampLiterals(), celgo.ValidateRegexLiterals()))
	require.NoError(t, err)
	for _, expr := range badLiterals {
		t.Run(expr, func(t *testing.T) {
			_, issues := reference.Compile(expr)
			require.Error(t, issues.Err(), "cel-go accepts it: not a bad literal")
			_, err := c.Compile(expr)
			var ce *CompileError
			require.True(t, errors.As(err, &ce), "got %v", err)
			assert.Equal(t, newCompileError(expr, issues).Message, ce.Message)
		})
	}
}

func TestGoodLiteralsCompile(t *testing.T) {
	c := newTestCompiler(t)
	for _, expr := range []string{
		"duration('90s') < duration('2m')",
		"timestamp('2026-11-24T10:00:00Z') < timestamp(status.lastUpdate)",
		"status.phase.matches('^Run') && matches(status.phase, 'ing$')",
		"'%s is %d'.format([status.phase, 3]) != ''",
	} {
		_, err := c.Compile(expr)
		assert.NoError(t, err, expr)
	}
}

// TestOneFormatValidator: the format validator that ext.Strings would add is
// replaced, not run a second time beside Sluice's.
func TestOneFormatValidator(t *testing.T) {
	c := newTestCompiler(t)
	names := map[string]int{}
	for _, v := range c.env.Validators() {
		names[v.Name()]++
		assert.IsType(t, calledValidator{}, v, v.Name())
	}
	assert.Equal(t, map[string]int{
		"cel.validator.duration": 1, "cel.validator.timestamp": 1,
		"cel.validator.matches": 1, stringFormatName: 1,
	}, names)
}
