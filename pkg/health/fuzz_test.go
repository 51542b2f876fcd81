package health_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
)

// FuzzEvaluate feeds arbitrary expressions and objects through compilation,
// RFC-0009 evaluation and kstatus: nothing may panic, compile failures must
// be *cel.CompileError, and every result must be one of the five statuses.
func FuzzEvaluate(f *testing.F) {
	objects := []string{
		`{"apiVersion":"example.org/v1","kind":"Widget","metadata":{"name":"w","generation":2},"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True","observedGeneration":2}]}}`,
		`{"apiVersion":"example.org/v1","kind":"Widget","metadata":{"name":"w"}}`,
		`{"apiVersion":"example.org/v1","kind":"Widget","metadata":{"generation":"x"},"status":{"observedGeneration":"7","conditions":"nope"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":1},"spec":{"replicas":"3"},"status":{"replicas":[]}}`,
		`{"status":null,"metadata":[],"spec":{"items":[1,2,3,4,5,6,7,8,9,10]}}`,
		`[]`,
	}
	exprs := []string{
		rfcCertificate.InProgress, rfcCertificate.Failed, rfcCertificate.Current,
		"has(self.status) && status.?conditions.orValue([]).exists(c, c.type == 'Ready')",
		"spec.items.all(a, spec.items.all(b, spec.items.all(c, a + b + c >= 0)))",
		"status.observedGeneration / 0 == 1",
		"metadata.name.matches(status.pattern)",
		"quantity(spec.size).isGreaterThan(quantity('1Gi'))",
		"semver(status.version).major() > 1",
		"cidr(spec.cidr).containsIP(status.ip)",
		"base64.decode(spec.data) == b'x'",
		"[1, 'a'].size() == 2",
		"status",
		"(((((((((((((((((((((((((((((((((((((((((((((((((true)))))))))))))))))))))))))))))))))))))))))))))))))",
		"",
	}
	for i, e := range exprs {
		f.Add(e, []byte(objects[i%len(objects)]))
	}

	c, err := cel.NewCompiler(cel.WithCostLimit(20_000), cel.WithCacheSize(64))
	if err != nil {
		f.Fatal(err)
	}
	valid := map[health.Status]bool{health.Current: true, health.InProgress: true, health.Failed: true, health.Unknown: true, health.NotFound: true}

	f.Fuzz(func(t *testing.T, expr string, objJSON []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(objJSON, &obj); err != nil || obj == nil {
			obj = map[string]any{"apiVersion": "example.org/v1", "kind": "Widget"}
		}
		u := &unstructured.Unstructured{Object: obj}

		check := health.Check{APIVersion: "example.org/v1", Kind: "Widget", InProgress: expr, Failed: expr, Current: expr}
		cc, err := health.Compile(c, check)
		if err != nil {
			var ce *cel.CompileError
			if expr != "" && !errors.As(err, &ce) {
				t.Fatalf("compile error is not a *cel.CompileError: %v", err)
			}
		} else if got := cc.Evaluate(obj); !valid[got.Status] {
			t.Fatalf("invalid status %q", got.Status)
		}

		if got := health.Kstatus(u); !valid[got.Status] {
			t.Fatalf("invalid kstatus status %q", got.Status)
		}
		r, err := health.Resolve([]health.Check{{APIVersion: "example.org/v1", Current: "has(self.status)"}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := health.NewEvaluator(c, r).Evaluate(u); !valid[got.Status] {
			t.Fatalf("invalid evaluator status %q", got.Status)
		}
	})
}
