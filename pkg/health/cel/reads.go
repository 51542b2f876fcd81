package cel

import (
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// reads lists the field paths of the object an expression can read: each chain of field
// selections (status.conditions, self.spec.replicas, has(spec.paused), status.?phase,
// self.spec['x']) that starts at self or at a top-level variable. A chain is cut at the first
// computed step (an index by a variable, a function call); the path up to there stands for its
// whole subtree, and a variable used whole (self, size(spec)) for all its fields. So keeping the
// listed paths, and everything below them, keeps every value the expression can observe.
func reads(e celast.Expr, declared map[string]struct{}) [][]string {
	var out [][]string
	var walk func(e celast.Expr)
	walk = func(e celast.Expr) {
		if root, fields, ok := selection(e); ok {
			switch _, isVar := declared[root.AsIdent()]; {
			case root.AsIdent() == SelfVariable:
				out = append(out, fields)
			case isVar:
				out = append(out, append([]string{root.AsIdent()}, fields...))
			}
			return
		}
		switch e.Kind() {
		case celast.SelectKind:
			walk(e.AsSelect().Operand())
		case celast.CallKind:
			call := e.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target())
			}
			for _, a := range call.Args() {
				walk(a)
			}
		case celast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el)
			}
		case celast.MapKind:
			for _, entry := range e.AsMap().Entries() {
				walk(entry.AsMapEntry().Key())
				walk(entry.AsMapEntry().Value())
			}
		case celast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value())
			}
		case celast.ComprehensionKind:
			c := e.AsComprehension()
			for _, part := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
				walk(part)
			}
		}
	}
	walk(e)
	return out
}

// selection matches a chain of constant field selections ending at an identifier, and returns
// the identifier and the fields, outermost last.
func selection(e celast.Expr) (celast.Expr, []string, bool) {
	var fields []string
	for {
		switch {
		case e.Kind() == celast.IdentKind:
			for i, j := 0, len(fields)-1; i < j; i, j = i+1, j-1 {
				fields[i], fields[j] = fields[j], fields[i]
			}
			return e, fields, true
		case e.Kind() == celast.SelectKind:
			fields = append(fields, e.AsSelect().FieldName())
			e = e.AsSelect().Operand()
		case e.Kind() == celast.CallKind && isConstantField(e.AsCall()):
			fields = append(fields, string(e.AsCall().Args()[1].AsLiteral().(types.String)))
			e = e.AsCall().Args()[0]
		default:
			return nil, nil, false
		}
	}
}

// isConstantField matches x.?f, x['f'] and x[?'f'].
func isConstantField(call celast.CallExpr) bool {
	switch call.FunctionName() {
	case operators.OptSelect, operators.Index, operators.OptIndex:
	default:
		return false
	}
	args := call.Args()
	if len(args) != 2 || args[1].Kind() != celast.LiteralKind {
		return false
	}
	_, ok := args[1].AsLiteral().(types.String)
	return ok
}
