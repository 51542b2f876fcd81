package cel

import (
	"errors"
	"fmt"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

const (
	// DefaultCostLimit bounds the work of one expression evaluation, in units
	// of about one expression step (see budget.go): a scan of a few hundred
	// conditions costs a few thousand, and the limit stops a runaway
	// comprehension after a few tens of milliseconds.
	DefaultCostLimit uint64 = 1_000_000
	// DefaultCacheSize bounds the number of distinct expressions kept compiled.
	DefaultCacheSize = 1024
	// DefaultMaxExpressionSize bounds the source length, in code points.
	DefaultMaxExpressionSize = 10_000
)

// Option configures a Compiler.
type Option func(*options)

type options struct {
	noPrefilter       bool
	costLimit         uint64
	cacheSize         int
	maxExpressionSize int
	variables         []string
}

// WithCostLimit sets the work, in units of about one expression step, after
// which an evaluation stops with an error. The count is deterministic: the
// same expression on the same object stops at the same point on any machine.
func WithCostLimit(limit uint64) Option { return func(o *options) { o.costLimit = limit } }

// WithCacheSize sets how many compiled expressions are kept; zero disables
// caching and compiles on every call.
func WithCacheSize(n int) Option { return func(o *options) { o.cacheSize = n } }

// WithMaxExpressionSize sets the longest accepted expression, in code points.
func WithMaxExpressionSize(n int) Option { return func(o *options) { o.maxExpressionSize = n } }

// WithVariables replaces DefaultVariables: the top-level fields that are
// declared as variables. Use it when the targets have other top-level fields,
// such as data on a ConfigMap.
func WithVariables(names ...string) Option {
	return func(o *options) { o.variables = append([]string(nil), names...) }
}

// Compiler turns expression text into programs, caching them by text. It is
// safe for concurrent use; share one per process.
type Compiler struct {
	env       *celgo.Env
	prefilter bool
	costLimit uint64
	declared  map[string]struct{}
	cache     *programCache
}

// NewCompiler builds the CEL environment once. Building it costs far more
// than compiling an expression, so callers keep the Compiler.
func NewCompiler(opts ...Option) (*Compiler, error) {
	o := options{
		costLimit:         DefaultCostLimit,
		cacheSize:         DefaultCacheSize,
		maxExpressionSize: DefaultMaxExpressionSize,
		variables:         DefaultVariables,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.cacheSize < 0 {
		return nil, fmt.Errorf("cache size must not be negative, got %d", o.cacheSize)
	}
	if o.maxExpressionSize <= 0 {
		return nil, fmt.Errorf("maximum expression size must be positive, got %d", o.maxExpressionSize)
	}
	if o.costLimit == 0 {
		return nil, errors.New("cost limit must be positive")
	}
	env, err := newEnv(o.variables, o.maxExpressionSize)
	if err != nil {
		return nil, fmt.Errorf("building CEL environment: %w", err)
	}
	c := &Compiler{env: env, costLimit: o.costLimit, declared: make(map[string]struct{})}
	c.prefilter = !o.noPrefilter
	for _, name := range o.variables {
		c.declared[name] = struct{}{}
	}
	if o.cacheSize > 0 {
		c.cache = newProgramCache(o.cacheSize)
	}
	return c, nil
}

// Compile returns the program for expr, from the cache when it was compiled
// before. Invalid expressions return a *CompileError, also cached, so a bad
// expression costs one compilation however often it is asked for.
func (c *Compiler) Compile(expr string) (*Program, error) {
	if c.cache == nil {
		return c.compile(expr)
	}
	e := c.cache.get(expr)
	e.once.Do(func() { e.prg, e.err = c.compile(expr) })
	return e.prg, e.err
}

// CachedExpressions reports how many expressions the cache holds.
func (c *Compiler) CachedExpressions() int {
	if c.cache == nil {
		return 0
	}
	return c.cache.len()
}

// NewActivation binds obj, an object's unstructured content, for evaluation.
// Release it once done to let the next object reuse it.
func (c *Compiler) NewActivation(obj map[string]any) *Activation {
	a := activations.Get().(*Activation)
	a.object, a.declared, a.budget.limit = obj, c.declared, c.costLimit
	return a
}

func (c *Compiler) compile(expr string) (*Program, error) {
	if expr == "" {
		return nil, &CompileError{Expression: expr, Message: "expression is empty"}
	}
	ast, issues := c.check(expr)
	if issues != nil && issues.Err() != nil {
		return nil, newCompileError(expr, issues)
	}
	switch out := ast.OutputType(); out.Kind() {
	case types.BoolKind, types.DynKind:
	default:
		return nil, &CompileError{Expression: expr,
			Message: fmt.Sprintf("expression must evaluate to a bool, not %s", out)}
	}
	prg, err := newProgram(c.env, ast)
	if err != nil {
		return nil, &CompileError{Expression: expr, Message: err.Error()}
	}
	return &Program{expr: expr, prg: prg, ast: ast, stepCost: comprehensionStepCost(ast),
		reads: reads(ast.NativeRep().Expr(), c.declared)}, nil
}

// check parses and type-checks expr, with its condition scans rewritten to
// prefilter their lists (prefilter.go). The result is the same. Should the
// rewrite not type-check, which happens when the range is not a list, the
// expression is checked as written, which also gives the errors the user
// wrote.
func (c *Compiler) check(expr string) (*celgo.Ast, *celgo.Issues) {
	parsed, issues := c.env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		return nil, issues
	}
	if !c.prefilter || !rewriteScans(parsed.NativeRep()) {
		return c.env.Check(parsed)
	}
	if checked, issues := c.env.Check(parsed); issues == nil || issues.Err() == nil {
		return checked, nil
	}
	return c.env.Compile(expr)
}

// newProgram plans the evaluation. Every comprehension step resolves the
// interrupt variable, which charges the step to the budget; results of
// functions that build values are charged too.
func newProgram(env *celgo.Env, ast *celgo.Ast) (prg celgo.Program, err error) {
	defer func() {
		// Planning folds some constant calls; a guard refusing one is a
		// compile error, not a crash.
		if r := recover(); r != nil {
			prg, err = nil, fmt.Errorf("planning the expression: %v", r)
		}
	}()
	return env.Program(ast,
		celgo.EvalOptions(celgo.OptOptimize),
		celgo.InterruptCheckFrequency(1),
		celgo.CustomDecorator(chargeBuiltValues),
	)
}

// Program is a compiled expression. It is safe for concurrent use.
type Program struct {
	expr     string
	prg      celgo.Program
	ast      *celgo.Ast
	stepCost uint64
	reads    [][]string
}

// Expression returns the source text.
func (p *Program) Expression() string { return p.expr }

// Reads returns the field paths of the object the expression can read, each standing for its
// whole subtree; an empty path stands for the whole object. A cache that keeps these fields of
// an object gives the expression the same result as the whole object. Do not modify the result.
func (p *Program) Reads() [][]string { return p.reads }

// ErrNotBool reports an expression whose value, known only at runtime, is not
// a bool.
var ErrNotBool = errors.New("expression did not evaluate to a bool")

// Eval evaluates the program against an activation. Errors include runtime
// failures (missing keys, bad conversions), as an *EvalError that quotes no
// value, and exceeding the cost limit, an interpreter.EvalCancelledError whose
// message says why.
func (p *Program) Eval(act *Activation) (bool, error) {
	act.budget.start(p.stepCost)
	val, _, err := p.prg.Eval(act)
	if err != nil {
		return false, sanitize(err, p.ast)
	}
	b, ok := val.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%w: got %s", ErrNotBool, val.Type().TypeName())
	}
	return b, nil
}
