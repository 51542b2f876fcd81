package health_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
)

// benchObjects returns n custom resources of five kinds covered by the
// built-in library, each in a Ready state.
func benchObjects(b *testing.B, n int) []*unstructured.Unstructured {
	templates := []string{
		`{apiVersion: cert-manager.io/v1, kind: Certificate, metadata: {name: c%d, namespace: apps, generation: 2},
		  status: {conditions: [{type: Ready, status: "True", reason: Ready, observedGeneration: 2}]}}`,
		`{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: k%d, namespace: flux-system, generation: 3},
		  status: {observedGeneration: 3, conditions: [{type: Ready, status: "True", reason: ReconciliationSucceeded, observedGeneration: 3},
		  {type: Healthy, status: "True", reason: Succeeded, observedGeneration: 3}]}}`,
		`{apiVersion: external-secrets.io/v1, kind: ExternalSecret, metadata: {name: e%d, namespace: apps, generation: 1},
		  status: {conditions: [{type: Ready, status: "True", reason: SecretSynced}]}}`,
		`{apiVersion: keda.sh/v1alpha1, kind: ScaledObject, metadata: {name: s%d, namespace: apps, generation: 1},
		  status: {conditions: [{type: Ready, status: "True"}, {type: Active, status: "False"}, {type: Fallback, status: "False"}]}}`,
		`{apiVersion: argoproj.io/v1alpha1, kind: Rollout, metadata: {name: r%d, namespace: apps, generation: 7},
		  status: {phase: Healthy, observedGeneration: "7"}}`,
	}
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = object(b, fmt.Sprintf(templates[i%len(templates)], i))
	}
	return objs
}

// BenchmarkReconcile1000 computes the health of 1,000 custom resources, as
// one reconcile of a HealthCheck does, compilation included.
//
//   - cached: programs come from the compiler's cache, warm after the first
//     reconcile.
//   - baseline-compile-per-reconcile: each check used in the reconcile is
//     compiled once at the start of every reconcile and then shared by the
//     objects of that kind, as Flux's kustomize-controller does.
func BenchmarkReconcile1000(b *testing.B) {
	objs := benchObjects(b, 1000)
	resolver, err := health.Resolve(nil, nil, builtin(b))
	if err != nil {
		b.Fatal(err)
	}

	b.Run("cached", func(b *testing.B) {
		e := health.NewEvaluator(compiler(b), resolver)
		b.ReportAllocs()
		for b.Loop() {
			for _, o := range objs {
				if e.Evaluate(o).Status != health.Current {
					b.Fatal("not current")
				}
			}
		}
	})

	b.Run("baseline-compile-per-reconcile", func(b *testing.B) {
		c := compiler(b, cel.WithCacheSize(0))
		b.ReportAllocs()
		for b.Loop() {
			compiled := map[health.Check]*health.CompiledCheck{}
			for _, o := range objs {
				m, _ := resolver.Match(o.GroupVersionKind())
				cc, ok := compiled[m.Check]
				if !ok {
					cc, err = health.Compile(c, m.Check)
					if err != nil {
						b.Fatal(err)
					}
					compiled[m.Check] = cc
				}
				if cc.Evaluate(o.Object).Status != health.Current {
					b.Fatal("not current")
				}
			}
		}
	})
}

// BenchmarkCertificateCheck is the per-object cost of the 3-expression
// built-in Certificate check, against compiling it first as an uncached
// reconcile must.
func BenchmarkCertificateCheck(b *testing.B) {
	var check health.Check
	for _, c := range builtin(b) {
		if c.Kind == "Certificate" {
			check = c
		}
	}
	obj := object(b, `{apiVersion: cert-manager.io/v1, kind: Certificate, metadata: {name: web, namespace: apps, generation: 2},
		status: {conditions: [{type: Ready, status: "True", reason: Ready, observedGeneration: 2}]}}`).Object

	b.Run("evaluate", func(b *testing.B) {
		cc, err := health.Compile(compiler(b), check)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if cc.Evaluate(obj).Status != health.Current {
				b.Fatal("not current")
			}
		}
	})

	b.Run("baseline-compile-and-evaluate", func(b *testing.B) {
		c := compiler(b, cel.WithCacheSize(0))
		b.ReportAllocs()
		for b.Loop() {
			cc, err := health.Compile(c, check)
			if err != nil {
				b.Fatal(err)
			}
			if cc.Evaluate(obj).Status != health.Current {
				b.Fatal("not current")
			}
		}
	})
}

// BenchmarkDeploymentHealth is kstatus on a Deployment, against a CEL check
// expressing the same rule (observed generation, all replicas updated and
// available).
func BenchmarkDeploymentHealth(b *testing.B) {
	obj := object(b, deploymentAvailable)

	b.Run("kstatus", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if health.Kstatus(obj).Status != health.Current {
				b.Fatal("not current")
			}
		}
	})

	b.Run("baseline-cel", func(b *testing.B) {
		cc, err := health.Compile(compiler(b), health.Check{APIVersion: "apps/v1", Kind: "Deployment",
			Current: "status.?updatedReplicas.orValue(0) == spec.replicas && status.?availableReplicas.orValue(0) == spec.replicas && " +
				"status.?replicas.orValue(0) == spec.replicas"})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if cc.Evaluate(obj.Object).Status != health.Current {
				b.Fatal("not current")
			}
		}
	})
}
