package health

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/sluicehq/sluice/pkg/health/cel"
)

// CompiledCheck is a Check whose expressions are compiled.
type CompiledCheck struct {
	check    Check
	compiler *cel.Compiler
	steps    []step
}

type step struct {
	field   string
	outcome Status
	program *cel.Program
	// whenTrue is the message summary when the expression is true, built
	// once here rather than on every evaluation.
	whenTrue string
}

// Compile compiles the expressions of check. Errors wrap a *cel.CompileError
// naming the bad expression; the controller reports them as Stalled.
// Programs come from the compiler's cache when it has them.
func Compile(compiler *cel.Compiler, check Check) (*CompiledCheck, error) {
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("check for %s: %w", check, err)
	}
	cc := &CompiledCheck{check: check, compiler: compiler}
	var errs []error
	// RFC-0009 order: the first true expression wins.
	for _, s := range []struct {
		field   string
		expr    string
		outcome Status
	}{
		{"inProgress", check.InProgress, InProgress},
		{"failed", check.Failed, Failed},
		{"current", check.Current, Current},
	} {
		if s.expr == "" {
			continue
		}
		prg, err := compiler.Compile(s.expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s expression of the check for %s: %w", s.field, check, err))
			continue
		}
		cc.steps = append(cc.steps, step{field: s.field, outcome: s.outcome, program: prg,
			whenTrue: s.field + " expression is true"})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cc, nil
}

// CompileAll compiles every check and returns all the problems at once, so
// that a person fixes them in one round.
func CompileAll(compiler *cel.Compiler, checks []Check) error {
	var errs []error
	for _, c := range checks {
		if _, err := Compile(compiler, c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Check returns the check this was compiled from.
func (cc *CompiledCheck) Check() Check { return cc.check }

// Evaluate computes the health of obj, an object's unstructured content:
//
//  1. status.observedGeneration present, numeric and different from
//     metadata.generation: InProgress, and no expression is evaluated;
//  2. otherwise inProgress, failed, current in that order: the first true one
//     wins;
//  3. none true: InProgress.
//
// An evaluation error (a missing key, a result that is not a bool, the cost
// limit) gives Unknown with the error as message, on every kind: RFC-0009
// reports evaluation errors. On an object without status (absent, null or
// empty) the message adds that its controller may not have reported yet, as
// for a new Cluster API Cluster; on a kind that never has status, such as a
// ConfigMap, the error is the expression's to fix.
func (cc *CompiledCheck) Evaluate(obj map[string]any) Result {
	if msg, ok := generationNotObserved(obj); ok {
		return Result{Status: InProgress, Message: msg}
	}
	act := cc.compiler.NewActivation(obj)
	defer act.Release()
	for _, s := range cc.steps {
		ok, err := s.program.Eval(act)
		if err != nil {
			msg := fmt.Sprintf("evaluating the %s expression of the check for %s: %v", s.field, cc.check, err)
			if !hasStatus(obj) {
				msg += " (the object has no status: if its controller has not reported yet, this clears once it does)"
			}
			return Result{Status: Unknown, Message: msg}
		}
		if ok {
			return Result{Status: s.outcome, Message: withCondition(s.whenTrue, obj)}
		}
	}
	return Result{Status: InProgress, Message: withCondition("no expression is true yet", obj)}
}

// generationNotObserved reports a spec change the controller has not seen.
// A non-numeric observedGeneration (Argo Rollouts once stored a hash there)
// cannot be compared and is ignored, as is an object without generation.
func generationNotObserved(obj map[string]any) (string, bool) {
	status, ok := obj["status"].(map[string]any)
	if !ok {
		return "", false
	}
	observed, ok := asInt64(status["observedGeneration"])
	if !ok {
		return "", false
	}
	meta, _ := obj["metadata"].(map[string]any)
	generation, ok := asInt64(meta["generation"])
	if !ok || generation == observed {
		return "", false
	}
	return fmt.Sprintf("generation %d not yet observed (observed %d)", generation, observed), true
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

func hasStatus(obj map[string]any) bool {
	switch s := obj["status"].(type) {
	case nil:
		return false
	case map[string]any:
		return len(s) > 0
	default:
		return true
	}
}

// withCondition appends the message of the condition that best explains the
// state: Ready when it has one, else the first condition that is not True.
func withCondition(summary string, obj map[string]any) string {
	status, _ := obj["status"].(map[string]any)
	conditions, _ := status["conditions"].([]any)
	var fallback string
	for _, raw := range conditions {
		c, _ := raw.(map[string]any)
		msg, _ := c["message"].(string)
		if msg == "" {
			continue
		}
		if c["type"] == "Ready" {
			return summary + ": " + msg
		}
		if fallback == "" && c["status"] != "True" {
			fallback = msg
		}
	}
	if fallback != "" {
		return summary + ": " + fallback
	}
	return summary
}
