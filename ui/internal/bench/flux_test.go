package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// unrelatedKustomizations name gates whose pages are not open; they are the ones reconciled.
const unrelatedKustomizations = 100

var (
	seedFlux sync.Once
	// fluxWrites counts the writes to Kustomizations once seeded: the reconcile requests and
	// kustomize-controller's own status writes.
	fluxWrites atomic.Int64
)

// seedKustomizations starts real source-controller and kustomize-controller, watching every
// namespace, and has them deploy Kustomization apps-NNN, naming gate-NNN (in that gate's
// namespace), for the first openPages+unrelatedKustomizations gates: each applies a ConfigMap of
// its own from a served repository, through its namespace's GitRepository. Both poll hourly, so
// from then on Flux writes only when asked. It waits until every Kustomization is applied, and
// until the UI lists the last one on its gate's page, then counts every write to a Kustomization.
func seedKustomizations(b *testing.B) {
	seedFlux.Do(func() {
		paths, err := flux.CRDPaths()
		require.NoError(b, err)
		require.NoError(b, env.InstallCRDPaths(paths...))
		ctx := context.Background()
		repo, url := gittest.NewGitServedRepo(b, "deploy")
		sha := repo.CommitFiles(b, "main", map[string]string{"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\n"}, "flags")
		flux.Start(b, env, flux.Options{})
		for n := range namespaces {
			flux.CreateGitRepository(b, env, fmt.Sprintf("team-%02d", n), "repo", flux.GitRepositorySpec{URL: url, Branch: "main", Interval: time.Hour})
		}
		for i := range openPages + unrelatedKustomizations {
			ns := fmt.Sprintf("team-%02d", i%namespaces)
			_, err = env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": flux.Kustomizations.GroupVersion().String(), "kind": "Kustomization",
				"metadata": map[string]any{"name": fmt.Sprintf("apps-%03d", i), "namespace": ns,
					"annotations": map[string]any{"gating.sluice.dev/gates": fmt.Sprintf("gate-%03d", i)}},
				"spec": map[string]any{"interval": "1h", "prune": true, "path": "./", "targetNamespace": ns, "nameSuffix": fmt.Sprintf("-%03d", i),
					"sourceRef": map[string]any{"kind": "GitRepository", "name": "repo"}},
			}}, metav1.CreateOptions{})
			require.NoError(b, err)
		}
		for i := range openPages + unrelatedKustomizations {
			flux.WaitForApplied(b, env, fmt.Sprintf("team-%02d", i%namespaces), fmt.Sprintf("apps-%03d", i), flux.Revision("main", sha))
		}
		last := openPages + unrelatedKustomizations - 1
		path := fmt.Sprintf("/gates/team-%02d/gate-%03d", last%namespaces, last)
		require.NoError(b, testenv.Wait(ctx, 2*time.Minute, func(context.Context) (bool, error) {
			body, err := get(uiURL + path)
			return err == nil && strings.Contains(body, fmt.Sprintf("apps-%03d", last)), nil
		}), "the UI lists the Kustomizations within 2 minutes")
		countKustomizationWrites(b)
	})
}

// countKustomizationWrites adds every change of a Kustomization to fluxWrites, until the
// benchmark ends.
func countKustomizationWrites(b *testing.B) {
	list, err := env.Dynamic.Resource(flux.Kustomizations).List(context.Background(), metav1.ListOptions{})
	require.NoError(b, err)
	w, err := env.Dynamic.Resource(flux.Kustomizations).Watch(context.Background(), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	require.NoError(b, err)
	b.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				fluxWrites.Add(1)
			}
		}
	}()
}
