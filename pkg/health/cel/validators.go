package cel

import (
	"fmt"
	"sync"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
)

// literalValidators are the checks of literal arguments that make a bad
// duration, timestamp, regular expression or format string a compile error
// rather than an error on every object: cel-go's own validators, unchanged.
//
// Each of them builds a navigable copy of the whole expression to look for
// its one function, so four of them built four copies of every expression,
// which took a tenth of compiling. Wrapped in calledValidator, each runs only
// on the expressions that call its function: one plain walk, no copy, for
// the others. What is validated, and the errors, stay cel-go's.
func literalValidators() ([]celgo.ASTValidator, error) {
	format, err := stringFormatValidator()
	if err != nil {
		return nil, err
	}
	return []celgo.ASTValidator{
		calledValidator{ASTValidator: celgo.ValidateDurationLiterals(), function: "duration"},
		calledValidator{ASTValidator: celgo.ValidateTimestampLiterals(), function: "timestamp"},
		calledValidator{ASTValidator: celgo.ValidateRegexLiterals(), function: "matches"},
		// ext.Strings adds its own format validator unless the environment
		// has one of that name already: declared before it, this one is
		// kept in its place.
		calledValidator{ASTValidator: format, function: "format"},
	}, nil
}

// stringFormatName is the name ext.Strings gives its format validator.
const stringFormatName = "cel.validator.string_format"

// stringFormatValidator is the validator ext.Strings adds for string.format
// at stringsVersion; it is not exported, so it is taken from an environment
// of that library alone, once.
var stringFormatValidator = sync.OnceValues(func() (celgo.ASTValidator, error) {
	env, err := celgo.NewEnv(ext.Strings(ext.StringsVersion(stringsVersion)))
	if err != nil {
		return nil, err
	}
	for _, v := range env.Validators() {
		if v.Name() == stringFormatName {
			return v, nil
		}
	}
	return nil, fmt.Errorf("ext.Strings declares no %s validator", stringFormatName)
})

// calledValidator runs its validator only on expressions that call function.
type calledValidator struct {
	celgo.ASTValidator
	function string
}

// Configure passes the validator's configuration on (the format validator
// exempts format's list argument from homogeneous list checks).
func (v calledValidator) Configure(c celgo.MutableValidatorConfig) error {
	if cv, ok := v.ASTValidator.(celgo.ASTValidatorConfigurer); ok {
		return cv.Configure(c)
	}
	return nil
}

// Validate implements celgo.ASTValidator.
func (v calledValidator) Validate(env *celgo.Env, config celgo.ValidatorConfig, a *celast.AST, iss *celgo.Issues) {
	if calls(a.Expr(), v.function) {
		v.ASTValidator.Validate(env, config, a, iss)
	}
}

// calls reports whether e calls function anywhere.
func calls(e celast.Expr, function string) bool {
	found := false
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(e celast.Expr) {
		found = found || (e.Kind() == celast.CallKind && e.AsCall().FunctionName() == function)
	}))
	return found
}
