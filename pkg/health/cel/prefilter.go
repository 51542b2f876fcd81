package cel

import (
	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Health checks mostly look for one condition type in a list of conditions:
//
//	status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')
//	status.conditions.filter(c, c.type == 'Ready').all(...)
//
// A comprehension step costs a few hundred nanoseconds; comparing one field
// in Go costs a few. So before such a comprehension runs, prefilter removes
// the list elements for which the step is known to change nothing: maps
// whose field holds a value other than the strings the predicate compares it
// with. The result is exactly the same, errors included:
//   - the predicate is false for a removed element, without error, because
//     a false operand of && makes it false whatever the other operand is, and
//     == between a string and any other value is false, never an error;
//   - only comprehensions whose step leaves the accumulator unchanged when
//     the predicate is false are rewritten (exists, filter, exists_one, the
//     filtering form of map), and only when neither their loop condition nor
//     their result reads the element;
//   - elements that are not maps, or lack the field, are kept, so any error
//     they cause still happens, in the same order.

// prefilterFunction is internal: CEL source cannot name a function
// starting with @.
const prefilterFunction = "@prefilter"

// prefilterDecl declares the function for the type checker and binds it.
var prefilterDecl = celgo.Function(prefilterFunction,
	// The binding checks its arguments itself.
	decls.DisableTypeGuards(true),
	celgo.Overload("prefilter_list_list_string",
		[]*celgo.Type{celgo.ListType(elemType), celgo.ListType(celgo.StringType)}, celgo.ListType(elemType),
		celgo.BinaryBinding(prefilter)))

// elemType keeps the type of the range's elements through the rewrite, so the
// predicate type-checks as written. A dyn range, which may be a map at
// runtime, checks as a list of dyn; prefilter returns a map unchanged.
var elemType = celgo.TypeParamType("T")

// prefilter returns the elements of rng that may make the predicate true or
// fail: all but the maps whose field holds none of the strings. guard is
// the constant list [field, strings...]. Anything but a list is returned as
// it is.
func prefilter(rng, guard ref.Val) ref.Val {
	g, ok := guard.Value().([]ref.Val)
	if !ok || len(g) == 0 {
		return rng
	}
	field, ok := g[0].(types.String)
	if !ok {
		return rng
	}
	switch list := rng.(type) {
	case *jsonList:
		return list.where(string(field), g[1:])
	case traits.Lister:
		return whereCEL(list, field, g[1:])
	}
	return rng
}

// where filters the raw elements, without converting the ones it removes.
// The list is returned as it is when nothing is removed.
func (l *jsonList) where(field string, values []ref.Val) ref.Val {
	var out *filteredList
	for i, e := range l.l {
		l.b.charge(1)
		drop := false
		if m, ok := e.(map[string]any); ok {
			v, found := m[field]
			drop = found && !rawIsOneOf(v, values)
		}
		switch {
		case drop && out == nil:
			out = &filteredList{}
			out.list = jsonList{l: append(out.small[:0], l.l[:i]...), b: l.b, maps: out.smallMaps[:0]}
		case !drop && out != nil:
			out.list.l = append(out.list.l, e)
		}
	}
	if out == nil {
		return l
	}
	return &out.list
}

// filteredList holds a filtered jsonList and, in the same allocation, room
// for the one or two conditions a filter usually keeps.
type filteredList struct {
	list      jsonList
	small     [2]any
	smallMaps [2]jsonMap
}

// rawIsOneOf is isOneOf for a raw value, without converting strings.
func rawIsOneOf(v any, values []ref.Val) bool {
	s, ok := v.(string)
	if !ok {
		return isOneOf(convert(nil, v), values)
	}
	for _, w := range values {
		if w, ok := w.(types.String); !ok || string(w) == s {
			return true
		}
	}
	return false
}

func whereCEL(list traits.Lister, field types.String, values []ref.Val) ref.Val {
	var kept []ref.Val
	it := list.Iterator()
	for it.HasNext() == types.True {
		e := it.Next()
		if m, ok := e.(traits.Mapper); ok {
			if v, found := m.Find(field); found && !isOneOf(v, values) {
				continue
			}
		}
		kept = append(kept, e)
	}
	return types.NewRefValList(adapter, kept)
}

// isOneOf reports whether v might equal one of values: true unless every
// comparison is false.
func isOneOf(v ref.Val, values []ref.Val) bool {
	for _, w := range values {
		if types.Equal(v, w) != types.False {
			return true
		}
	}
	return false
}

// rewriteScans rewrites the range R of each eligible comprehension of a
// parsed, not yet checked, expression into @prefilter(R, [field, values...]),
// and reports whether it rewrote any. Checking the rewritten expression then
// costs no more than checking the original.
func rewriteScans(parsed *celast.AST) bool {
	sites := prefilterSites(parsed)
	if len(sites) == 0 {
		return false
	}
	fac := celast.NewExprFactory()
	lastID := celast.MaxID(parsed)
	nextID := func(int64) int64 { lastID++; return lastID }
	for _, site := range sites {
		rng := fac.CopyExpr(site.rng)
		rng.RenumberIDs(nextID)
		guard := []celast.Expr{fac.NewLiteral(nextID(0), types.String(site.field))}
		for _, v := range site.values {
			guard = append(guard, fac.NewLiteral(nextID(0), types.String(v)))
		}
		site.rng.SetKindCase(fac.NewCall(nextID(0), prefilterFunction, rng, fac.NewList(nextID(0), guard, nil)))
	}
	return true
}

type prefilterSite struct {
	rng    celast.Expr
	field  string
	values []string
}

// prefilterSites lists the comprehensions to rewrite, inner ones first.
func prefilterSites(a *celast.AST) []prefilterSite {
	var sites []prefilterSite
	celast.PostOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.ComprehensionKind {
			return
		}
		c := e.AsComprehension()
		if c.HasIterVar2() || references(c.LoopCondition(), c.IterVar()) || references(c.Result(), c.IterVar()) {
			return
		}
		pred, ok := identityWhenFalse(c.LoopStep(), c.AccuVar())
		if !ok {
			return
		}
		if field, values, ok := fieldGuard(pred, c.IterVar()); ok {
			sites = append(sites, prefilterSite{rng: c.IterRange(), field: field, values: values})
		}
	}))
	return sites
}

// identityWhenFalse returns the predicate of a loop step that leaves the
// accumulator unchanged when the predicate is false: accu || P, or
// P ? X : accu.
func identityWhenFalse(step celast.Expr, accu string) (celast.Expr, bool) {
	if step.Kind() != celast.CallKind {
		return nil, false
	}
	call := step.AsCall()
	args := call.Args()
	switch {
	case call.FunctionName() == operators.LogicalOr && len(args) == 2 && isIdent(args[0], accu):
		return args[1], true
	case call.FunctionName() == operators.Conditional && len(args) == 3 && isIdent(args[2], accu):
		return args[0], true
	}
	return nil, false
}

// fieldGuard finds a field of the element and the strings such that pred is
// false, without error, on any map whose field holds another value.
func fieldGuard(pred celast.Expr, elem string) (string, []string, bool) {
	if pred.Kind() != celast.CallKind {
		return "", nil, false
	}
	call := pred.AsCall()
	args := call.Args()
	if len(args) != 2 {
		return "", nil, false
	}
	switch call.FunctionName() {
	case operators.Equals:
		if f, ok := elemField(args[0], elem); ok {
			if s, ok := stringLiteral(args[1]); ok {
				return f, []string{s}, true
			}
		}
		if f, ok := elemField(args[1], elem); ok {
			if s, ok := stringLiteral(args[0]); ok {
				return f, []string{s}, true
			}
		}
	case operators.LogicalAnd:
		// False as soon as one side is false.
		f1, v1, ok1 := fieldGuard(args[0], elem)
		f2, v2, ok2 := fieldGuard(args[1], elem)
		switch {
		case ok1 && ok2 && f1 == f2:
			return f1, intersect(v1, v2), true
		case ok1:
			return f1, v1, true
		case ok2:
			return f2, v2, true
		}
	case operators.LogicalOr:
		// False only when both sides are.
		f1, v1, ok1 := fieldGuard(args[0], elem)
		f2, v2, ok2 := fieldGuard(args[1], elem)
		if ok1 && ok2 && f1 == f2 {
			return f1, union(v1, v2), true
		}
	}
	return "", nil, false
}

// elemField matches elem.field, a plain selection (not has(), not .?).
func elemField(e celast.Expr, elem string) (string, bool) {
	if e.Kind() != celast.SelectKind {
		return "", false
	}
	sel := e.AsSelect()
	if sel.IsTestOnly() || !isIdent(sel.Operand(), elem) {
		return "", false
	}
	return sel.FieldName(), true
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

func isIdent(e celast.Expr, name string) bool {
	return e.Kind() == celast.IdentKind && e.AsIdent() == name
}

func references(e celast.Expr, name string) bool {
	found := false
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		found = found || isIdent(x, name)
	}))
	return found
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, y := range b {
		if len(intersect([]string{y}, out)) == 0 {
			out = append(out, y)
		}
	}
	return out
}
