package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/health/cel"
)

// Evaluator computes the health of objects with the checks of a Resolver,
// falling back to kstatus for kinds without a check.
type Evaluator struct {
	compiler *cel.Compiler
	resolver *Resolver
}

// NewEvaluator returns an Evaluator. Share the compiler across Evaluators so
// that its cache spans reconciles.
func NewEvaluator(compiler *cel.Compiler, resolver *Resolver) *Evaluator {
	return &Evaluator{compiler: compiler, resolver: resolver}
}

// Evaluate returns the health of obj; nil means the object was not found.
// An invalid expression gives Unknown here; validate spec checks with
// CompileAll first to report them as a configuration error instead.
func (e *Evaluator) Evaluate(obj *unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Status: NotFound, Message: "object not found"}
	}
	m, ok := e.resolver.Match(obj.GroupVersionKind())
	if !ok {
		return Kstatus(obj)
	}
	cc, err := Compile(e.compiler, m.Check)
	if err != nil {
		return Result{Status: Unknown, Message: string(m.Source) + ": " + err.Error()}
	}
	return cc.Evaluate(obj.Object)
}
