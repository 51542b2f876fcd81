package cel

import (
	"sync"

	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Activation binds one object for evaluation. Build it once per object and
// reuse it for all the expressions of a check, one after the other; it is
// not safe for concurrent use.
type Activation struct {
	object   map[string]any
	declared map[string]struct{}
	budget   budget
	// vars caches the CEL values of self and the top-level variables, which
	// the expressions of a check read again and again.
	vars  [6]boundVar
	nvars int
	// tops and memos hold the object's top-level maps as CEL values.
	tops  [4]jsonMap
	memos [4]memo
	ntops int
}

type boundVar struct {
	name string
	val  ref.Val
}

var _ interpreter.Activation = (*Activation)(nil)

// emptyField is what a declared top-level field that the object lacks
// evaluates to. An empty map keeps has(status.conditions) and
// status.?conditions meaningful (false, none) on an object without status,
// where an unbound variable would make every expression an error. Presence of
// the field itself is tested with has(self.status).
var emptyField = map[string]any{}

// interruptVariable is the name cel-go resolves after each comprehension step
// of a program built with an interrupt check frequency.
const interruptVariable = "#interrupted"

// ResolveName implements interpreter.Activation.
func (a *Activation) ResolveName(name string) (any, bool) {
	if name == interruptVariable {
		// Never interrupt: charging the step stops the evaluation when the
		// budget is spent.
		a.budget.charge(a.budget.stepCost)
		return nil, false
	}
	for _, v := range a.vars[:a.nvars] {
		if v.name == name {
			return v.val, true
		}
	}
	var raw any
	switch v, ok := a.object[name]; {
	case name == SelfVariable:
		raw = a.object
	case ok && v != nil:
		raw = v
	default:
		if _, ok := a.declared[name]; !ok {
			return nil, false
		}
		raw = emptyField
	}
	val := a.bind(raw)
	if a.nvars < len(a.vars) {
		a.vars[a.nvars] = boundVar{name: name, val: val}
		a.nvars++
	}
	return val, true
}

var activations = sync.Pool{New: func() any { return new(Activation) }}

// Release returns the activation for reuse by another object. Neither it nor
// anything an evaluation returned may be used after.
func (a *Activation) Release() {
	*a = Activation{}
	activations.Put(a)
}

// bind converts a top-level value, keeping the maps' reads in memos.
func (a *Activation) bind(raw any) ref.Val {
	m, ok := raw.(map[string]any)
	if !ok || a.ntops == len(a.tops) {
		return convert(&a.budget, raw)
	}
	a.budget.charge(1)
	top := &a.tops[a.ntops]
	*top = jsonMap{m: m, b: &a.budget, memo: &a.memos[a.ntops]}
	a.ntops++
	return top
}

// Parent implements interpreter.Activation.
func (a *Activation) Parent() interpreter.Activation { return nil }
