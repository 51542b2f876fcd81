package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// alwaysRead are the fields Evaluate reads of every object: its kind, its generation and
// deletion (kstatus, and the generation rule before any expression), and status, whose presence
// alone decides between InProgress and Unknown. The rest of metadata is read only by
// expressions that name it.
var alwaysRead = [][]string{{"apiVersion"}, {"kind"}, {"metadata", "generation"}, {"metadata", "deletionTimestamp"}, {"status"}}

// kstatusSpecReads are the spec fields kstatus reads (sigs.k8s.io/cli-utils v0.37:
// Deployments, StatefulSets, ReplicaSets, Jobs and Services); every other field it reads is in
// metadata or status. TestKstatusReadsOnlyWhatIsListed and TestKstatusObjectsNeedTheirSpecFields guard the list.
var kstatusSpecReads = [][]string{
	{"spec", "replicas"}, {"spec", "updateStrategy"}, {"spec", "progressDeadlineSeconds"},
	{"spec", "parallelism"}, {"spec", "completions"}, {"spec", "type"}, {"spec", "clusterIP"},
}

// Reads returns the field paths of an object of kind gvk that Evaluate reads, each standing for
// its whole subtree (an empty path for the whole object): the check's expressions for a kind
// with a check, what kstatus reads otherwise. A watch that caches only these fields gives
// Evaluate the same results as whole objects, with a fraction of the memory.
func (e *Evaluator) Reads(gvk schema.GroupVersionKind) [][]string {
	paths := append([][]string(nil), alwaysRead...)
	m, ok := e.resolver.Match(gvk)
	if !ok {
		return append(paths, kstatusSpecReads...)
	}
	cc, err := Compile(e.compiler, m.Check)
	if err != nil {
		// Evaluate reports the error without reading the object.
		return paths
	}
	for _, s := range cc.steps {
		paths = append(paths, s.program.Reads()...)
	}
	return paths
}
