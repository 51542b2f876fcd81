package cel

import (
	"regexp/syntax"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	k8slib "k8s.io/apiserver/pkg/cel/library"
)

// Go's regular expressions run in time proportional to the input times the
// size of the compiled pattern, up to a few hundred nanoseconds a byte: a
// condition message of a megabyte matched against a pattern of a few dozen
// operators takes most of a second. So a regular expression is charged
// before it runs, per byte of input and per instruction of its compiled
// pattern.

// regexOptimizations are cel-go's and Kubernetes' own compilations of
// constant patterns, which the charged calls apply themselves.
var regexOptimizations = map[string]*interpreter.RegexOptimization{
	"matches": interpreter.MatchesRegexOptimization,
	"find":    k8slib.FindRegexOptimization,
	"findAll": k8slib.FindAllRegexOptimization,
}

// chargeRegex wraps a call of matches, find or findAll. The wrapper is not
// an InterpretableCall, so cel-go's regex optimizer, which runs after this
// decorator, leaves it alone: it compiles a constant pattern itself.
func chargeRegex(call interpreter.InterpretableCall, opt *interpreter.RegexOptimization) (interpreter.Interpretable, error) {
	args := call.Args()
	if len(args) <= opt.RegexIndex {
		return call, nil
	}
	r := &chargedRegex{call: call, input: args[0], pattern: args[opt.RegexIndex]}
	if c, ok := r.pattern.(interpreter.InterpretableConst); ok {
		if p, ok := c.Value().(types.String); ok {
			compiled, err := opt.Factory(call, string(p))
			if err != nil {
				return nil, err
			}
			r.call, r.perByte = compiled, regexCostPerByte(string(p))
		}
	}
	return r, nil
}

type chargedRegex struct {
	call           interpreter.Interpretable
	input, pattern interpreter.Interpretable
	// perByte is the charge per byte of input of a constant pattern; zero
	// when the pattern is computed.
	perByte uint64
}

func (r *chargedRegex) ID() int64 { return r.call.ID() }

// Eval charges the match, then runs it. The input, and a computed pattern,
// are evaluated twice; they are pure, and nearly always plain field reads.
func (r *chargedRegex) Eval(act interpreter.Activation) ref.Val {
	if b := budgetOf(act); b != nil {
		if in, ok := r.input.Eval(act).(types.String); ok {
			perByte := r.perByte
			if perByte == 0 {
				if p, ok := r.pattern.Eval(act).(types.String); ok {
					perByte = regexCostPerByte(string(p))
				}
			}
			b.charge(1 + uint64(len(in))*perByte)
		}
	}
	return r.call.Eval(act)
}

// regexCostPerByte is the units charged per byte of input: one, plus one
// per four instructions of the compiled pattern. An invalid pattern costs
// one; the call itself reports the error.
func regexCostPerByte(pattern string) uint64 {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 1
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 1
	}
	return 1 + uint64(len(prog.Inst))/4
}
