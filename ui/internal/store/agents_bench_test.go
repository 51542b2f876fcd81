package store

import (
	"fmt"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// realisticKustomization is a Kustomization as the API server returns it for a service of 60
// objects: managed fields of three writers, kubectl's last applied manifest, patches, an
// inventory, and Flux's conditions and history.
func realisticKustomization(i int) *unstructured.Unstructured {
	var inventory, history []any
	for j := range 60 {
		inventory = append(inventory, map[string]any{"id": fmt.Sprintf("apps_web-%d_apps_Deployment_%d", i, j), "v": "v1"})
	}
	for j := range 5 {
		history = append(history, map[string]any{"digest": fmt.Sprintf("sha256:%064d", j), "firstReconciled": "2026-11-29T10:00:00Z",
			"lastReconciled": "2026-11-29T10:00:00Z", "lastReconciledDuration": "1.2s", "lastReconciledStatus": "ReconciliationSucceeded",
			"totalReconciliations": int64(12), "metadata": map[string]any{"revision": fmt.Sprintf("env/dev@sha1:%040d", j)}})
	}
	var managed []any
	for _, m := range []string{"kubectl", "kustomize-controller", "gate-controller"} {
		managed = append(managed, map[string]any{"manager": m, "operation": "Apply", "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:interval": map[string]any{}, "f:path": map[string]any{},
				"f:prune": map[string]any{}, "f:sourceRef": map[string]any{"f:kind": map[string]any{}, "f:name": map[string]any{}}}}})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": fmt.Sprintf("web-%d", i), "namespace": "flux-system", "uid": fmt.Sprintf("uid-%d", i),
			"resourceVersion": "12345", "generation": int64(3), "labels": map[string]any{"team": "web", "tier": "frontend"},
			"annotations": map[string]any{"gating.sluice.dev/gates": "freeze",
				"kubectl.kubernetes.io/last-applied-configuration": fmt.Sprintf(`{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"web-%d","namespace":"flux-system"},"spec":{"interval":"5m","path":"./apps/web","prune":true,"sourceRef":{"kind":"GitRepository","name":"deploy-dev"}}}`, i)},
			"managedFields": managed},
		"spec": map[string]any{"interval": "5m", "path": "./apps/web", "prune": true, "wait": true, "timeout": "3m",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "deploy-dev"},
			"patches":   []any{map[string]any{"patch": "- op: replace\n  path: /spec/replicas\n  value: 3\n", "target": map[string]any{"kind": "Deployment"}}}},
		"status": map[string]any{"observedGeneration": int64(3), "lastAppliedRevision": "env/dev@sha1:" + fmt.Sprintf("%040d", i),
			"lastAttemptedRevision": "env/dev@sha1:" + fmt.Sprintf("%040d", i), "inventory": map[string]any{"entries": inventory}, "history": history,
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied revision: env/dev@sha1:abc", "lastTransitionTime": "2026-11-29T10:00:00Z", "observedGeneration": int64(3)},
				map[string]any{"type": "Healthy", "status": "True", "reason": "Succeeded", "message": "Health check passed in 1.1s", "lastTransitionTime": "2026-11-29T10:00:00Z", "observedGeneration": int64(3)},
			}},
	}}
}

// BenchmarkAgentCache measures the heap a cache of 1,000 Kustomizations holds, kept whole (the
// baseline: an informer without a transform) and through keepAgentFields.
func BenchmarkAgentCache(b *testing.B) {
	const n = 1000
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"whole", func(o any) (any, error) { return o, nil }},
		{"keepAgentFields", keepAgentFields},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perObject float64
			for b.Loop() {
				indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{bySourceRef: sourceRefOf})
				before := heapInUse()
				for i := range n {
					kept, _ := tc.transform(realisticKustomization(i))
					_ = indexer.Add(kept)
				}
				perObject = float64(heapInUse()-before) / n
				runtime.KeepAlive(indexer)
			}
			b.ReportMetric(perObject, "B/object")
		})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
