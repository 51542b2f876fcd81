package cel

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"github.com/stretchr/testify/require"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// reference evaluates expressions as plain cel-go does: the same language
// and the same binding of the object, none of Sluice's evaluation machinery
// (its own values, the prefilter, the size guards, the budget). Sluice must
// give exactly its results, errors included.
type reference struct {
	env      *celgo.Env
	declared []string
	programs map[string]celgo.Program
}

func newReference(t testing.TB) *reference {
	t.Helper()
	opts, err := languageOptions(DefaultVariables, DefaultMaxExpressionSize)
	require.NoError(t, err)
	env, err := celgo.NewEnv(opts...)
	require.NoError(t, err)
	return &reference{env: env, declared: DefaultVariables, programs: map[string]celgo.Program{}}
}

// eval returns the value, or the error of compiling or evaluating.
func (r *reference) eval(expr string, obj map[string]any) (ref.Val, error) {
	prg, ok := r.programs[expr]
	if !ok {
		ast, issues := r.env.Compile(expr)
		if issues != nil && issues.Err() != nil {
			return nil, issues.Err()
		}
		var err error
		if prg, err = r.env.Program(ast, celgo.EvalOptions(celgo.OptOptimize)); err != nil {
			return nil, err
		}
		r.programs[expr] = prg
	}
	vars := map[string]any{SelfVariable: obj}
	for _, name := range r.declared {
		vars[name] = emptyField
		if v, ok := obj[name]; ok && v != nil {
			vars[name] = v
		}
	}
	val, _, err := prg.Eval(vars)
	return val, err
}

// sameResult fails unless c gives expr on obj the reference's result.
func sameResult(t *testing.T, c *Compiler, r *reference, expr string, obj map[string]any) {
	t.Helper()
	want, wantErr := r.eval(expr, obj)
	prg, err := c.Compile(expr)
	if err != nil {
		require.Error(t, wantErr, "only the reference compiles %q", expr)
		return
	}
	act := c.NewActivation(obj)
	defer act.Release()
	got, gotErr := prg.Eval(act)
	switch b, isBool := want.(types.Bool); {
	case wantErr != nil:
		require.Error(t, gotErr, "%q: the reference fails with %v", expr, wantErr)
		// Sluice reports the kind of a runtime error, never its values (EvalError); the
		// position may differ where the prefilter rewrote the expression.
		gotMsg := gotErr.Error()
		var ee *EvalError
		if errors.As(gotErr, &ee) {
			gotMsg = ee.Kind
		}
		wantMsg := wantErr.Error()
		if errors.As(sanitize(wantErr, nil), &ee) {
			wantMsg = ee.Kind
		}
		require.Equal(t, wantMsg, gotMsg, expr)
	case isBool:
		require.NoError(t, gotErr, expr)
		require.Equal(t, bool(b), got, expr)
	default:
		require.True(t, errors.Is(gotErr, ErrNotBool), "%q: the reference gives %v, got %v %v", expr, want, got, gotErr)
	}
}

// oddConditions holds every shape a condition list can take in a broken or
// hostile object, for the prefilter to keep or drop.
const oddConditions = `{"apiVersion": "example.org/v1", "kind": "Widget",
 "metadata": {"name": "w", "generation": 2, "labels": {"app": "web", "tier": ""}},
 "spec": {"a": [1, 2, {"x": "y"}], "b": [1, 2, {"x": "y"}], "m": {"k": "v"}, "nums": [3, 1, 2],
          "s": "abcabc", "words": ["x", "y", "z"], "f": 1.5, "n": null, "t": true},
 "status": {"observedGeneration": 2, "conditions": [
   "not a map", 5, null, [], {"type": 5}, {"type": null}, {"status": "True"},
   {"type": ["Ready"]}, {"type": "Ready", "status": "True", "observedGeneration": 2, "reason": "Done"},
   {"type": "Ready", "status": "False"}, {"type": "Issuing", "status": "True", "observedGeneration": "x"},
   {"type": "ready", "status": "True"}]}}`

var referenceObjects = []string{
	oddConditions,
	`{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "c", "generation": 1},
	  "status": {"conditions": [{"type": "Issuing", "status": "False", "observedGeneration": 1},
	  {"type": "Ready", "status": "True", "observedGeneration": 1, "message": "ok"}]}}`,
	`{"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"}}`,
	`{"apiVersion": "example.org/v1", "kind": "Widget", "status": null, "spec": {}}`,
	`{"status": {"conditions": "nope"}}`,
	`{"status": {"conditions": {"Ready": "True", "type": "Ready"}}}`,
	`{"status": {"conditions": []}, "metadata": {"generation": 3}}`,
}

var referenceExpressions = []string{
	// Condition scans the prefilter rewrites.
	"status.conditions.exists(c, c.type == 'Ready')",
	"status.conditions.exists(c, 'Ready' == c.type && c.status == 'True')",
	"status.conditions.exists(c, c.status == 'True' && c.type == 'Ready')",
	"status.conditions.exists(c, c.type == 'Nope' && c.missing == 'x')",
	"status.conditions.exists(c, c.type == 'Ready' && c.missing == 'x')",
	"status.conditions.exists(c, c.type == 'Issuing' || c.type == 'Ready')",
	"status.conditions.exists(c, (c.type == 'Issuing' && c.status == 'True') || (c.type == 'Ready' && c.status == 'False'))",
	"status.conditions.exists(c, c.type == 'Ready' && c.type == 'Issuing')",
	"status.conditions.exists(c, has(c.type) && c.type == 'Ready' && c.status == 'True')",
	"status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.?observedGeneration.orValue(metadata.generation) == metadata.generation)",
	"status.conditions.filter(c, c.type == 'Ready').size() == 2",
	"status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')",
	"status.conditions.exists_one(c, c.type == 'Issuing')",
	"status.conditions.map(c, c.type == 'Ready', c.status).size() == 2",
	"status.conditions.exists(c, c.type == 'Ready' && status.conditions.exists(d, d.type == c.type))",
	// Scans the prefilter leaves alone.
	"status.conditions.all(c, c.type == 'Ready')",
	"status.conditions.exists(c, c.type != 'Ready')",
	"status.conditions.exists(c, c.type == 'Ready' || c.status == 'True')",
	"status.conditions.exists(c, c.?type.orValue('') == 'Ready')",
	"[{'type': 'Ready'}, {'type': 'x'}].exists(c, c.type == 'Ready')",
	"status.conditions.exists(k, k == 'Ready')",
	"status.conditions.exists(k, k.type == 'Ready')",
	"{'a': 1}.exists(k, k.type == 'Ready')",
	"[1, 2].exists(k, k.type == 'Ready')",
	"[{'type': 'Ready'}, {'type': 1}].filter(c, c.type == 'Ready').size() == 1",
	// Values: maps, lists, equality, conversions, library functions.
	"self.spec.a == self.spec.b && spec.a == [1, 2, {'x': 'y'}]",
	"spec.m == {'k': 'v'} && {'k': 'v'} == spec.m && spec.m != {'k': 'w'}",
	"spec.a[2] in spec.b && 2 in spec.a && !(7 in spec.a)",
	"'k' in spec.m && !('z' in spec.m) && spec.m.all(k, k == 'k')",
	"spec.a[5] == 1",
	"spec.a[-1] == 1",
	"spec.m[1] == 'v'",
	"spec.missing == 1",
	"has(spec.m.k) && !has(spec.m.z) && has(self.status) && has(status.conditions)",
	"spec.?z.orValue(1) == 1 && spec.?m.?k.orValue('') == 'v'",
	"type(spec.m) == map && type(spec.a) == list && type(spec.s) == string",
	"size(self) == 5 && spec.a.size() == 3 && size(spec.m) == 1",
	"dyn(spec.a) + [4] == [1, 2, {'x': 'y'}, 4] && [0] + spec.a == [0, 1, 2, {'x': 'y'}]",
	"spec.nums.sum() == 6 && spec.nums.max() == 3 && spec.nums.indexOf(1) == 1 && !spec.nums.isSorted()",
	"spec.a.isSorted()",
	"sets.contains(spec.a, [1]) && sets.equivalent(spec.a, spec.b) && !sets.intersects(spec.nums, [9])",
	"spec.words.join('-') == 'x-y-z' && spec.s.replace('a', 'xy') == 'xybcxybc'",
	"spec.s.split('b').size() == 3 && spec.s.upperAscii() == 'ABCABC'",
	"'%s %s %d'.format([spec.m, spec.a, spec.nums[0]]) == '{k: v} [1, 2, {x: y}] 3'",
	"string(spec.f) == '1.5' && string(spec.nums[0]) == '3' && int(spec.f) == 1",
	"spec.n == null && spec.t && spec.f > 1",
	"spec.nums.map(n, n * 2) == [6, 2, 4]",
	"metadata.labels.exists(k, metadata.labels[k] == '') && metadata.?labels.app == optional.of('web')",
	"self.metadata.name.matches('^w') && self.kind.startsWith('Wid')",
	"spec.s",
	"spec.a",
	"status.conditions[0] == 'not a map'",
	"status.conditions.exists(c, c == null)",
	"status.conditions.filter(c, c == 5).size() == 1",
}

func TestSameResultsAsCelGo(t *testing.T) {
	c := newTestCompiler(t)
	plain := newTestCompiler(t, withoutPrefilter())
	r := newReference(t)
	for _, doc := range referenceObjects {
		var obj map[string]any
		require.NoError(t, utiljson.Unmarshal([]byte(doc), &obj))
		for _, expr := range referenceExpressions {
			sameResult(t, c, r, expr, obj)
			sameResult(t, plain, r, expr, obj)
		}
	}
}

// TestLibrarySameResultsAsCelGo runs every built-in check on every fixture.
func TestLibrarySameResultsAsCelGo(t *testing.T) {
	var checks []map[string]string
	data, err := os.ReadFile(filepath.Join("..", "library", "builtin.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &checks))
	files, err := filepath.Glob(filepath.Join("..", "library", "testdata", "*.yaml"))
	require.NoError(t, err)
	var objects []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(data)
		require.NoError(t, err)
		var cases []struct{ Object map[string]any }
		require.NoError(t, utiljson.Unmarshal(js, &cases))
		for _, c := range cases {
			objects = append(objects, c.Object)
		}
	}
	require.NotEmpty(t, objects)
	c := newTestCompiler(t)
	r := newReference(t)
	for _, check := range checks {
		for _, field := range []string{"inProgress", "failed", "current"} {
			if expr := check[field]; expr != "" {
				for _, obj := range objects {
					sameResult(t, c, r, expr, obj)
				}
			}
		}
	}
}

func TestPrefilterRewritesOnlyWhatItMay(t *testing.T) {
	c := newTestCompiler(t)
	cases := map[string]int{
		"status.conditions.exists(c, c.type == 'Ready')":                                             1,
		"status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')":                  1,
		"status.conditions.exists_one(c, c.type == 'Ready')":                                         1,
		"status.conditions.map(c, 'Ready' == c.type, c.status).size() == 1":                          1,
		"status.conditions.exists(c, c.type == 'A' && status.conditions.exists(d, d.reason == 'B'))": 2,
		"status.conditions.all(c, c.type == 'Ready')":                                                0,
		"status.conditions.exists(c, c.type != 'Ready')":                                             0,
		"status.conditions.exists(c, c.type == 'A' || c.reason == 'B')":                              0,
		"status.conditions.exists(c, has(c.type) || c.type == 'A')":                                  0,
		"status.conditions.exists(c, c.?type == optional.of('A'))":                                   0,
		"[{'type': 'A'}].exists(c, c.type == 'A')":                                                   1,
		"status.conditions.map(c, c.type == 'A').exists(b, b)":                                       0,
	}
	for expr, want := range cases {
		parsed, issues := c.env.Parse(expr)
		require.NoError(t, issues.Err(), expr)
		require.Len(t, prefilterSites(parsed.NativeRep()), want, expr)
		_, err := c.Compile(expr)
		require.NoError(t, err, "%q compiles rewritten", expr)
	}
}

// withoutPrefilter compiles expressions as written.
func withoutPrefilter() Option { return func(o *options) { o.noPrefilter = true } }

// FuzzSameResultsAsCelGo compares Sluice's evaluation with plain cel-go's on
// arbitrary expressions and objects, except where Sluice's budget stops it.
func FuzzSameResultsAsCelGo(f *testing.F) {
	for i, expr := range referenceExpressions {
		f.Add(expr, []byte(referenceObjects[i%len(referenceObjects)]))
	}
	c, err := NewCompiler(WithCacheSize(64))
	if err != nil {
		f.Fatal(err)
	}
	r := newReference(f)
	f.Fuzz(func(t *testing.T, expr string, doc []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(doc, &obj); err != nil || obj == nil {
			return
		}
		if prg, err := c.Compile(expr); err == nil {
			act := c.NewActivation(obj)
			_, err := prg.Eval(act)
			act.Release()
			var cancelled interpreter.EvalCancelledError
			if errors.As(err, &cancelled) {
				return
			}
		}
		if len(r.programs) > 1000 {
			r.programs = map[string]celgo.Program{}
		}
		sameResult(t, c, r, expr, obj)
	})
}
