package celbench

import (
	"context"
	"fmt"
	"testing"

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
