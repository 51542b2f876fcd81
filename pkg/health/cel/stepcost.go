package cel

import (
	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
)

// comprehensionStepCost is what one comprehension step of the expression is
// charged: the weight of the largest loop body (condition and step) in it. A
// step of a nested comprehension is charged the same as a step of the outer
// one, an overestimate for the outer one.
//
// Weighing the body, rather than charging one unit per step, keeps the units
// close to the time a step takes even when the body holds a long literal list
// or a long chain of conditions. A variable costs three units, as resolving
// it through the comprehensions' scopes takes about three times as long as
// any other node (measured: about 20 ns a unit on the benchmark machine).
func comprehensionStepCost(ast *celgo.Ast) uint64 {
	var largest uint64
	celast.PostOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.ComprehensionKind {
			return
		}
		c := e.AsComprehension()
		if n := nodeCount(c.LoopCondition()) + nodeCount(c.LoopStep()); n > largest {
			largest = n
		}
	}))
	return largest
}

func nodeCount(e celast.Expr) uint64 {
	var n uint64
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() == celast.IdentKind {
			n += 3
		} else {
			n++
		}
	}))
	return n
}
