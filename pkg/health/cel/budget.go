package cel

import (
	"fmt"

	"github.com/google/cel-go/interpreter"
)

// budget bounds the work of one expression evaluation, deterministically:
// the same expression on the same object always stops at the same point,
// whatever the load of the machine.
//
// Work is counted in units of about one expression step, at the few places
// where it can grow with the data:
//   - each comprehension step (all, exists, filter, map...) costs the weight
//     of the largest comprehension body in the expression, fixed at compile
//     time (stepcost.go); a loop whose body holds a long literal list costs
//     more;
//   - each value read from the object costs one unit, strings one more per 64
//     bytes;
//   - each string, bytes or list that a function builds (+, replace, join,
//     format, split...) costs one unit per 16 bytes or per element;
//   - a regular expression costs, before it runs, a unit or more per byte of
//     input, more for longer patterns (regex.go).
//
// The functions that could build a huge value in one call (replace, join,
// format) or compare two lists pairwise (sets.*) check the size first, so no
// single call runs away before the budget is charged (see guards.go).
//
// cel-go's own runtime cost tracking does the same job but observes every
// step, which made evaluation two to three times slower than Flux's and let
// a 1000x1000 comprehension run for most of a second before stopping.
type budget struct {
	limit    uint64
	spent    uint64
	stepCost uint64
}

// start resets the budget for the evaluation of one program.
func (b *budget) start(stepCost uint64) {
	b.spent = 0
	b.stepCost = stepCost
}

// charge spends units and stops the evaluation once the limit is passed. A nil
// budget, for values that cel-go converts outside an evaluation, is free.
func (b *budget) charge(units uint64) {
	if b == nil {
		return
	}
	b.spent += units
	if b.spent > b.limit {
		panic(interpreter.EvalCancelledError{
			Cause: interpreter.CostLimitExceeded,
			Message: fmt.Sprintf("cost limit exceeded: the expression did more than %d units of work "+
				"(about one unit per expression step; comprehensions over long lists, nested ones above all, cost the most)",
				b.limit),
		})
	}
}

// refuse stops the evaluation before a call that would be too large to run.
func refuse(format string, args ...any) {
	panic(interpreter.EvalCancelledError{
		Cause:   interpreter.CostLimitExceeded,
		Message: "cost limit exceeded: " + fmt.Sprintf(format, args...),
	})
}

// budgetOf finds the evaluation's budget from any activation of it: inside
// comprehensions cel-go nests its own activations above ours.
func budgetOf(a interpreter.Activation) *budget {
	for a != nil {
		if act, ok := a.(*Activation); ok {
			return &act.budget
		}
		a = a.Parent()
	}
	return nil
}
