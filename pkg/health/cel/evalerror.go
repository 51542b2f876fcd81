package cel

import (
	"errors"
	"fmt"
	"strings"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// EvalError is an expression that failed at runtime, told without the values it read. A check
// may read objects its author may not read (the user library, a HealthCheck of another team),
// and CEL's own messages quote values: "no such key: <key>" for a computed key, strconv's
// `parsing "<value>"` for a conversion. So only the kind of failure and where in the
// expression it happened are kept: enough for the author to fix it, nothing of the data.
type EvalError struct {
	// Kind is one of the fixed descriptions of evalKinds, or "runtime error".
	Kind string
	// Key is the missing map key or field, only when the expression's own text names it (a
	// field selection or a string literal): a key computed from the data is never told.
	Key string
	// Line and Column locate the failing step in the expression, from 1; 0 when unknown.
	Line, Column int
}

func (e *EvalError) Error() string {
	msg := e.Kind
	if e.Key != "" {
		msg = fmt.Sprintf("%s: %s", msg, e.Key)
	}
	if e.Kind == "no such key" {
		msg += " (test for it with has() or ?.)"
	}
	if e.Line == 0 {
		return msg
	}
	return fmt.Sprintf("%s, at line %d column %d of the expression", msg, e.Line, e.Column)
}

// evalKinds map a fragment of CEL's message to what is reported in its place, first match wins.
var evalKinds = []struct{ fragment, kind string }{
	{"no such key", "no such key"},
	{"no such attribute", "no such key"},
	{"no such field", "no such key"},
	{"no such overload", "no function or operator takes values of these types (a field holds another type than the expression expects)"},
	{"division by zero", "division by zero"},
	{"modulus by zero", "modulus by zero"},
	{"overflow", "arithmetic overflow"},
	{"index out of range", "list index out of range"},
	{"invalid index", "list index out of range"},
	{"regex", "invalid regular expression"},
	{"conversion", "a value cannot be converted to the type asked for"},
	{"parsing", "a value cannot be converted to the type asked for"},
	{"iterable", "a value the expression iterates over is not a list or map"},
	{"range error", "a value is out of range for the type asked for"},
}

// sanitize turns an error of cel-go's Eval into an *EvalError. The cost limit and this package's
// guards (EvalCancelledError) and ErrNotBool keep their messages, which hold only sizes, limits
// and type names.
func sanitize(err error, ast *celgo.Ast) error {
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) || errors.Is(err, ErrNotBool) {
		return err
	}
	out := &EvalError{Kind: "runtime error"}
	msg := strings.ToLower(err.Error())
	for _, k := range evalKinds {
		if strings.Contains(msg, k.fragment) {
			out.Kind = k.kind
			break
		}
	}
	if key, ok := strings.CutPrefix(err.Error(), "no such key: "); ok && ast != nil && namedIn(ast, key) {
		out.Key = key
	}
	var node interface{ NodeID() int64 }
	if ast != nil && errors.As(err, &node) && node.NodeID() != 0 {
		if loc := ast.NativeRep().SourceInfo().GetStartLocation(node.NodeID()); loc.Line() > 0 {
			out.Line, out.Column = loc.Line(), loc.Column()+1
		}
	}
	return out
}

// namedIn reports whether the expression's text names key, as a selected field or a string
// literal: then telling it tells nothing the author did not write.
func namedIn(ast *celgo.Ast, key string) bool {
	for _, e := range celast.MatchDescendants(celast.NavigateAST(ast.NativeRep()), celast.AllMatcher()) {
		switch e.Kind() {
		case celast.SelectKind:
			if e.AsSelect().FieldName() == key {
				return true
			}
		case celast.LiteralKind:
			if s, ok := e.AsLiteral().(types.String); ok && string(s) == key {
				return true
			}
		}
	}
	return false
}
