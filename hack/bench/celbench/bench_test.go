package celbench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/apis/kustomize"
	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
)

func sluiceCompiler(b *testing.B, opts ...cel.Option) *cel.Compiler {
	c, err := cel.NewCompiler(opts...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func fluxExprs(c health.Check) *kustomize.HealthCheckExpressions {
	return &kustomize.HealthCheckExpressions{Current: c.Current, InProgress: c.InProgress, Failed: c.Failed}
}

// BenchmarkCompileCertificateCheck compiles the three expressions of the
// Certificate check, uncached.
func BenchmarkCompileCertificateCheck(b *testing.B) {
	check := certificateCheck(b)
	b.Run("sluice", func(b *testing.B) {
		c := sluiceCompiler(b, cel.WithCacheSize(0))
		b.ReportAllocs()
		reportCPU(b)
		for b.Loop() {
			if _, err := health.Compile(c, check); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-flux", func(b *testing.B) {
		b.ReportAllocs()
		reportCPU(b)
		for b.Loop() {
			if _, err := fluxcel.NewStatusEvaluator(fluxExprs(check)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEvaluateCertificate evaluates the compiled Certificate check on one
// Ready Certificate: all three expressions run, each scanning every condition.
func BenchmarkEvaluateCertificate(b *testing.B) {
	check := certificateCheck(b)
	for _, n := range []int{2, 20} {
		obj := certificate("web", n)
		b.Run(fmt.Sprintf("conditions=%d/sluice", n), func(b *testing.B) {
			cc, err := health.Compile(sluiceCompiler(b), check)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			reportCPU(b)
			for b.Loop() {
				if r := cc.Evaluate(obj.Object); r.Status != health.Current {
					b.Fatal(r)
				}
			}
		})
		b.Run(fmt.Sprintf("conditions=%d/baseline-flux", n), func(b *testing.B) {
			ev, err := fluxcel.NewStatusEvaluator(fluxExprs(check))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			reportCPU(b)
			for b.Loop() {
				if r, err := ev.Evaluate(ctx, obj); err != nil || r.Status != status.CurrentStatus {
					b.Fatal(r, err)
				}
			}
		})
	}
}

// BenchmarkEvaluateUnguardedScan evaluates a check whose scans the prefilter
// cannot narrow (all(), and conditions told apart by status rather than
// type): the cost of the general path, on the Certificate with 20
// conditions.
func BenchmarkEvaluateUnguardedScan(b *testing.B) {
	check := health.Check{APIVersion: "cert-manager.io/v1", Kind: "Certificate",
		InProgress: "status.conditions.exists(c, c.status == 'Unknown')",
		Failed:     "status.conditions.exists(c, c.status == 'False')",
		Current:    "status.conditions.all(c, c.status == 'True' && c.observedGeneration == metadata.generation)"}
	obj := certificate("web", 20)
	b.Run("sluice", func(b *testing.B) {
		cc, err := health.Compile(sluiceCompiler(b), check)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		reportCPU(b)
		for b.Loop() {
			if r := cc.Evaluate(obj.Object); r.Status != health.Current {
				b.Fatal(r)
			}
		}
	})
	b.Run("baseline-flux", func(b *testing.B) {
		ev, err := fluxcel.NewStatusEvaluator(fluxExprs(check))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ReportAllocs()
		reportCPU(b)
		for b.Loop() {
			if r, err := ev.Evaluate(ctx, obj); err != nil || r.Status != status.CurrentStatus {
				b.Fatal(r, err)
			}
		}
	})
}

// BenchmarkReconcile1000Certificates is one reconcile over 1,000
// Certificates. Sluice's programs come from its compiler's cache; Flux's
// kustomize-controller builds its status readers, so compiles, on every
// reconcile.
func BenchmarkReconcile1000Certificates(b *testing.B) {
	check := certificateCheck(b)
	for _, n := range []int{2, 20} {
		objs := make([]*unstructured.Unstructured, 1000)
		for i := range objs {
			objs[i] = certificate(fmt.Sprintf("c%d", i), n)
		}
		b.Run(fmt.Sprintf("conditions=%d/sluice", n), func(b *testing.B) {
			c := sluiceCompiler(b)
			b.ReportAllocs()
			reportCPU(b)
			for b.Loop() {
				cc, err := health.Compile(c, check)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range objs {
					if r := cc.Evaluate(o.Object); r.Status != health.Current {
						b.Fatal(r)
					}
				}
			}
		})
		b.Run(fmt.Sprintf("conditions=%d/baseline-flux", n), func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			reportCPU(b)
			for b.Loop() {
				ev, err := fluxcel.NewStatusEvaluator(fluxExprs(check))
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range objs {
					if r, err := ev.Evaluate(ctx, o); err != nil || r.Status != status.CurrentStatus {
						b.Fatal(r, err)
					}
				}
			}
		})
	}
}

// hostileCheck returns a check whose current expression is expr, for objects
// of the Widget kind.
func hostileCheck(expr string) health.Check {
	return health.Check{APIVersion: "example.org/v1", Kind: "Widget", Current: expr}
}

func widget(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.org/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "generation": int64(1)},
		"spec":     spec,
		"status":   map[string]any{"phase": "Ready"},
	}}
}

func intItems(n int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = int64(i)
	}
	return items
}

// BenchmarkHostileExpression is the time a hostile expression takes to be
// stopped, with the default cost limit. Flux has no bound of its own: its
// kustomize-controller gives the evaluation the Kustomization's timeout
// (minutes). The baseline is Flux's evaluator given a context that ends after
// 50 ms, the tightest bound a Flux user could set; the string blow-up cannot
// be run on Flux at all, as it would build a string of 10 GB in one call.
func BenchmarkHostileExpression(b *testing.B) {
	nested := "spec.items.all(a, spec.items.all(b, a + b >= 0))"
	blowUp := "'aaaaaaaaaa'" + strings.Repeat(".replace('a', 'aaaaaaaaaa')", 10) + " == ''"
	dataBlowUp := "spec.s.replace('a', spec.s).replace('a', spec.s) == ''"
	cases := []struct {
		name string
		expr string
		spec map[string]any
	}{
		{"nested-1000x1000", nested, map[string]any{"items": intItems(1000)}},
		{"string-blow-up-literal", blowUp, map[string]any{}},
		{"string-blow-up-data", dataBlowUp, map[string]any{"s": strings.Repeat("a", 1000)}},
		{"literal-list-in-loop", "spec.items.all(i, i in [" + strings.Repeat("i, ", 2000) + "i])",
			map[string]any{"items": intItems(1000)}},
		{"regex-on-large-string", "spec.items.all(i, spec.s.matches('^(a|b)*$'))",
			map[string]any{"items": intItems(1000), "s": strings.Repeat("a", 100_000)}},
	}
	for _, c := range cases {
		obj := widget(c.spec)
		b.Run(c.name+"/sluice", func(b *testing.B) {
			cc, err := health.Compile(sluiceCompiler(b), hostileCheck(c.expr))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			reportCPU(b)
			for b.Loop() {
				if r := cc.Evaluate(obj.Object); r.Status != health.Unknown || !strings.Contains(r.Message, "cost limit exceeded") {
					b.Fatal(r)
				}
			}
		})
	}
	b.Run("nested-1000x1000/baseline-flux-50ms-context", func(b *testing.B) {
		ev, err := fluxcel.NewStatusEvaluator(&kustomize.HealthCheckExpressions{Current: nested})
		if err != nil {
			b.Fatal(err)
		}
		obj := widget(map[string]any{"items": intItems(1000)})
		b.ReportAllocs()
		reportCPU(b)
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			if _, err := ev.Evaluate(ctx, obj); err == nil {
				b.Fatal("not interrupted")
			}
			cancel()
		}
	})
}

// BenchmarkAllOverList is one all() over a list of n elements: the time must
// grow linearly with n.
func BenchmarkAllOverList(b *testing.B) {
	expr := "spec.items.all(i, i >= 0)"
	for _, n := range []int{1000, 4000} {
		obj := widget(map[string]any{"items": intItems(n)})
		b.Run(fmt.Sprintf("n=%d/sluice", n), func(b *testing.B) {
			cc, err := health.Compile(sluiceCompiler(b), hostileCheck(expr))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			reportCPU(b)
			for b.Loop() {
				if r := cc.Evaluate(obj.Object); r.Status != health.Current {
					b.Fatal(r)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/baseline-flux", n), func(b *testing.B) {
			ev, err := fluxcel.NewStatusEvaluator(&kustomize.HealthCheckExpressions{Current: expr})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			reportCPU(b)
			for b.Loop() {
				if r, err := ev.Evaluate(ctx, obj); err != nil || r.Status != status.CurrentStatus {
					b.Fatal(r, err)
				}
			}
		})
	}
}
