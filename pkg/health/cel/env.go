// Package cel compiles and evaluates the CEL expressions of health checks.
//
// Expressions see the object under evaluation twice:
//   - as self, so that presence tests such as has(self.status) work;
//   - as top-level variables named after the object's top-level fields
//     (apiVersion, kind, metadata, spec, status), as the RFC-0009 examples
//     are written: status.conditions.filter(...).
//
// Both are declared as dyn: health checks target custom resources whose
// schemas the evaluator does not know.
package cel

import (
	"fmt"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	k8slib "k8s.io/apiserver/pkg/cel/library"
)

// SelfVariable names the whole object.
const SelfVariable = "self"

// DefaultVariables are the top-level fields declared as variables when no
// others are configured. Other top-level fields stay reachable as self.<field>.
//
// Declaring a fixed set, rather than every identifier an expression happens
// to use, keeps typos such as "stauts.conditions" compile errors, which the
// controller reports as Stalled instead of evaluating them on every object.
var DefaultVariables = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// stringsVersion pins ext.Strings so that a cel-go upgrade cannot change the
// meaning of expressions users already wrote.
const stringsVersion = 4

// newEnv builds the environment: the language as users see it
// (languageOptions), plus how Sluice evaluates it: its own values for
// objects, the prefilter of condition scans and the size guards.
func newEnv(variables []string, maxExpressionSize int) (*celgo.Env, error) {
	opts, err := languageOptions(variables, maxExpressionSize)
	if err != nil {
		return nil, err
	}
	env, err := celgo.NewEnv(append(opts, celgo.CustomTypeAdapter(adapter), prefilterDecl)...)
	if err != nil {
		return nil, err
	}
	guards, err := sizeGuards(env)
	if err != nil {
		return nil, err
	}
	return env.Extend(guards...)
}

// languageOptions declare the variables and libraries expressions may use.
func languageOptions(variables []string, maxExpressionSize int) ([]celgo.EnvOption, error) {
	validators, err := literalValidators()
	if err != nil {
		return nil, err
	}
	opts := []celgo.EnvOption{
		celgo.Variable(SelfVariable, celgo.DynType),
		celgo.DefaultUTCTimeZone(true),
		celgo.CrossTypeNumericComparisons(true),
		celgo.EagerlyValidateDeclarations(true),
		celgo.ParserExpressionSizeLimit(maxExpressionSize),
		celgo.ASTValidators(validators...),
		celgo.OptionalTypes(),
		ext.Strings(ext.StringsVersion(stringsVersion)),
		ext.Sets(),
		ext.Encoders(),
		k8slib.Lists(),
		k8slib.Regex(),
		k8slib.URLs(),
		k8slib.Quantity(),
		k8slib.IP(),
		k8slib.CIDR(),
		k8slib.SemverLib(k8slib.SemverVersion(1)),
		k8slib.Format(),
	}
	for _, name := range variables {
		if name == SelfVariable {
			return nil, fmt.Errorf("variable %q is reserved for the whole object", SelfVariable)
		}
		opts = append(opts, celgo.Variable(name, celgo.DynType))
	}
	return opts, nil
}
