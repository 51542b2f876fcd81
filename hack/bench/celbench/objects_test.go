package celbench

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/library"
)

// certificate returns a Ready cert-manager Certificate with n conditions, the
// Ready one last, so that every expression scans the whole list.
func certificate(name string, n int) *unstructured.Unstructured {
	conditions := make([]any, 0, n)
	for i := range n - 1 {
		conditions = append(conditions, map[string]any{
			"type": fmt.Sprintf("Check%02d", i), "status": "True", "reason": "Passed",
			"message": "the check passed", "observedGeneration": int64(2),
			"lastTransitionTime": "2026-11-24T10:00:00Z",
		})
	}
	conditions = append(conditions, map[string]any{
		"type": "Ready", "status": "True", "reason": "Ready",
		"message": "Certificate is up to date and has not expired", "observedGeneration": int64(2),
		"lastTransitionTime": "2026-11-24T10:00:00Z",
	})
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata":   map[string]any{"name": name, "namespace": "apps", "generation": int64(2)},
		"spec": map[string]any{"secretName": name + "-tls", "dnsNames": []any{name + ".example.com"},
			"issuerRef": map[string]any{"name": "letsencrypt", "kind": "ClusterIssuer"}},
		"status": map[string]any{
			"conditions": conditions,
			"notAfter":   "2027-02-22T10:00:00Z",
			"revision":   int64(3),
		},
	}}
}

// certificateCheck is the built-in Certificate check: the same three
// expressions are given to both engines.
func certificateCheck(tb testing.TB) health.Check {
	tb.Helper()
	checks, err := library.Builtin()
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range checks {
		if c.APIVersion == "cert-manager.io/v1" && c.Kind == "Certificate" {
			return c
		}
	}
	tb.Fatal("no built-in Certificate check")
	return health.Check{}
}
