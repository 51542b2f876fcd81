package cel

import (
	"fmt"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

const (
	// maxBuiltString bounds the string one call of replace, join or format
	// may build. Health checks compare short strings; this is a thousand
	// times the longest condition message Kubernetes keeps.
	maxBuiltString = 1 << 20
	// maxSetComparisons bounds the element comparisons of one sets.* call.
	maxSetComparisons = 250_000
)

// buildingFunctions return values that can be larger than their arguments.
// After each call, the size of the result is charged to the budget.
var buildingFunctions = map[string]bool{
	"_+_": true, "replace": true, "join": true, "format": true, "split": true,
	"lowerAscii": true, "upperAscii": true, "trim": true, "reverse": true, "strings.quote": true,
	"substring": true, "charAt": true, "base64.encode": true, "base64.decode": true,
	"string": true, "bytes": true,
}

// chargeBuiltValues is a cel-go decorator: calls of buildingFunctions charge
// their result to the budget, and regular expressions their input
// (regex.go).
func chargeBuiltValues(i interpreter.Interpretable) (interpreter.Interpretable, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	if opt, ok := regexOptimizations[call.Function()]; ok {
		return chargeRegex(call, opt)
	}
	if !buildingFunctions[call.Function()] {
		return i, nil
	}
	return &chargedCall{InterpretableCall: call}, nil
}

type chargedCall struct {
	interpreter.InterpretableCall
}

func (c *chargedCall) Eval(act interpreter.Activation) ref.Val {
	v := c.InterpretableCall.Eval(act)
	switch r := v.(type) {
	case types.String:
		budgetOf(act).charge(1 + uint64(len(r))/16)
	case types.Bytes:
		budgetOf(act).charge(1 + uint64(len(r))/16)
	case traits.Lister:
		if n, ok := r.Size().(types.Int); ok {
			budgetOf(act).charge(1 + uint64(n))
		}
	}
	return v
}

// sizeGuards rebinds the overloads that could build a huge value, or compare
// two lists pairwise, in a single call, so that they refuse before starting.
// The guards wrap the environment's own implementations, which they call
// unchanged when the call is within bounds.
func sizeGuards(env *celgo.Env) ([]celgo.EnvOption, error) {
	guards := map[string]func(args []ref.Val){
		"string_replace_string_string":     checkReplace,
		"string_replace_string_string_int": checkReplace,
		"list_join_string":                 checkJoin,
		"string_format":                    checkFormat,
		"list_sets_contains_list":          checkSets(1),
		"list_sets_intersects_list":        checkSets(1),
		"list_sets_equivalent_list":        checkSets(2),
	}
	var opts []celgo.EnvOption
	for name, fn := range env.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			return nil, err
		}
		for _, o := range fn.OverloadDecls() {
			check, ok := guards[o.ID()]
			if !ok {
				continue
			}
			impl := bindingOf(bindings, o.ID())
			if impl == nil {
				return nil, fmt.Errorf("overload %s has no implementation to guard", o.ID())
			}
			opts = append(opts, celgo.FunctionDecls(guarded(name, o, impl, check)))
			delete(guards, o.ID())
		}
	}
	if len(guards) > 0 {
		return nil, fmt.Errorf("overloads to guard are missing from the environment: %v", guards)
	}
	return opts, nil
}

func bindingOf(bindings []*functions.Overload, id string) *functions.Overload {
	for _, b := range bindings {
		if b.Operator == id {
			return b
		}
	}
	return nil
}

// guarded redeclares overload o of function name with the same signature,
// running check on the arguments before the original implementation.
func guarded(name string, o *decls.OverloadDecl, impl *functions.Overload, check func([]ref.Val)) *decls.FunctionDecl {
	var bindings []decls.OverloadOpt
	if impl.Unary != nil {
		bindings = append(bindings, decls.UnaryBinding(func(a ref.Val) ref.Val {
			check([]ref.Val{a})
			return impl.Unary(a)
		}))
	}
	if impl.Binary != nil {
		bindings = append(bindings, decls.BinaryBinding(func(a, b ref.Val) ref.Val {
			check([]ref.Val{a, b})
			return impl.Binary(a, b)
		}))
	}
	if impl.Function != nil {
		bindings = append(bindings, decls.FunctionBinding(func(args ...ref.Val) ref.Val {
			check(args)
			return impl.Function(args...)
		}))
	}
	overload := decls.Overload
	if o.IsMemberFunction() {
		overload = decls.MemberOverload
	}
	fn, err := decls.NewFunction(name, overload(o.ID(), o.ArgTypes(), o.ResultType(), bindings...))
	if err != nil {
		// The signature is the one the environment accepted already.
		panic(err)
	}
	return fn
}

// checkReplace refuses a replace whose result would pass maxBuiltString.
// Replacing the empty string inserts the replacement around every character.
func checkReplace(args []ref.Val) {
	s, old, repl, ok := threeStrings(args)
	if !ok || len(repl) <= len(old) {
		return
	}
	n := strings.Count(s, old)
	if len(args) == 4 {
		if limit, ok := args[3].(types.Int); ok && limit >= 0 && int(limit) < n {
			n = int(limit)
		}
	}
	if size := uint64(len(s)) + uint64(n)*uint64(len(repl)-len(old)); size > maxBuiltString {
		refuse("replace would build a string of %d bytes, over the limit of %d", size, maxBuiltString)
	}
}

func threeStrings(args []ref.Val) (a, b, c string, ok bool) {
	if len(args) < 3 {
		return "", "", "", false
	}
	x, ok1 := args[0].(types.String)
	y, ok2 := args[1].(types.String)
	z, ok3 := args[2].(types.String)
	return string(x), string(y), string(z), ok1 && ok2 && ok3
}

// checkJoin refuses a join whose separators alone would pass maxBuiltString;
// the elements themselves already exist.
func checkJoin(args []ref.Val) {
	list, ok := args[0].(traits.Lister)
	sep, ok2 := args[1].(types.String)
	if !ok || !ok2 {
		return
	}
	if n, ok := list.Size().(types.Int); ok && n > 1 && uint64(n-1)*uint64(len(sep)) > maxBuiltString {
		refuse("join would build a string of more than %d bytes of separators, over the limit of %d", uint64(n-1)*uint64(len(sep)), maxBuiltString)
	}
}

// checkFormat refuses a format whose arguments, formatted, would pass
// maxBuiltString: one value may be listed many times in the arguments.
func checkFormat(args []ref.Val) {
	if len(args) < 2 {
		return
	}
	if size := formattedSize(args[1], 0); size > maxBuiltString {
		refuse("format would build a string of more than %d bytes", maxBuiltString)
	}
}

// formattedSize approximates the length of v formatted, stopping early once
// past maxBuiltString.
func formattedSize(v ref.Val, acc uint64) uint64 {
	switch x := v.(type) {
	case types.String:
		return acc + uint64(len(x))
	case types.Bytes:
		return acc + uint64(len(x))
	case traits.Lister:
		it := x.Iterator()
		for acc <= maxBuiltString && it.HasNext() == types.True {
			acc = formattedSize(it.Next(), acc+2)
		}
		return acc
	case traits.Mapper:
		it := x.Iterator()
		for acc <= maxBuiltString && it.HasNext() == types.True {
			k := it.Next()
			acc = formattedSize(x.Get(k), formattedSize(k, acc+4))
		}
		return acc
	}
	return acc + 24
}

// checkSets refuses a sets.* call that would compare more than
// maxSetComparisons pairs of elements; passes is how many times the function
// may compare each pair.
func checkSets(passes uint64) func(args []ref.Val) {
	return func(args []ref.Val) {
		a, ok1 := args[0].(traits.Lister)
		b, ok2 := args[1].(traits.Lister)
		if !ok1 || !ok2 {
			return
		}
		n, ok1 := a.Size().(types.Int)
		m, ok2 := b.Size().(types.Int)
		if ok1 && ok2 && passes*uint64(n)*uint64(m) > maxSetComparisons {
			refuse("sets.* would compare %d pairs of elements, over the limit of %d", passes*uint64(n)*uint64(m), maxSetComparisons)
		}
	}
}
