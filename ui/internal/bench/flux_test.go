package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// unrelatedKustomizations name gates whose pages are not open; they take the status writes.
const unrelatedKustomizations = 100

var seedFlux sync.Once

// seedKustomizations installs Flux's CRDs and creates Kustomization apps-NNN naming gate-NNN
// (in that gate's namespace) for the first openPages+unrelatedKustomizations gates, then waits
// until the UI lists the last one on its gate's page.
func seedKustomizations(b *testing.B) {
	seedFlux.Do(func() {
		paths, err := flux.CRDPaths()
		require.NoError(b, err)
		require.NoError(b, env.InstallCRDPaths(paths...))
		ctx := context.Background()
		for i := range openPages + unrelatedKustomizations {
			ns := fmt.Sprintf("team-%02d", i%namespaces)
			_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": flux.Kustomizations.GroupVersion().String(), "kind": "Kustomization",
				"metadata": map[string]any{"name": fmt.Sprintf("apps-%03d", i), "namespace": ns,
					"annotations": map[string]any{"gating.sluice.dev/gates": fmt.Sprintf("gate-%03d", i)}},
				"spec": map[string]any{"interval": "10m", "prune": true, "path": "./", "sourceRef": map[string]any{"kind": "GitRepository", "name": "repo"}},
			}}, metav1.CreateOptions{})
			require.NoError(b, err)
		}
		last := openPages + unrelatedKustomizations - 1
		path := fmt.Sprintf("/gates/team-%02d/gate-%03d", last%namespaces, last)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			body, err := get(uiURL + path)
			if err == nil && strings.Contains(body, fmt.Sprintf("apps-%03d", last)) {
				return
			}
			require.True(b, time.Now().Before(deadline), "the UI lists the Kustomizations within 2 minutes")
			time.Sleep(500 * time.Millisecond)
		}
	})
}

// fluxStatusWrite writes a Kustomization's status as kustomize-controller does after a
// reconcile: the revision applied and the Ready condition.
func fluxStatusWrite(b *testing.B, ctx context.Context, ns, name string, n int) {
	client := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns)
	revision := "main@sha1:" + fmt.Sprintf("%040x", n)
	_, err := testenv.Update(ctx, kustomizationStatus{client}, name, func(k *unstructured.Unstructured) {
		k.Object["status"] = map[string]any{"lastAppliedRevision": revision, "observedGeneration": k.GetGeneration(),
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
				"message": "Applied revision: " + revision + " (write " + strconv.Itoa(n) + ")", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}}}
	})
	require.NoError(b, err)
}

// kustomizationStatus writes a Kustomization through its status subresource, as
// kustomize-controller does.
type kustomizationStatus struct{ c dynamic.ResourceInterface }

func (k kustomizationStatus) Get(ctx context.Context, name string, o metav1.GetOptions) (*unstructured.Unstructured, error) {
	return k.c.Get(ctx, name, o)
}

func (k kustomizationStatus) Update(ctx context.Context, u *unstructured.Unstructured, o metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return k.c.UpdateStatus(ctx, u, o)
}
