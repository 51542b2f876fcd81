// Package bench measures the gate-controller on the real local control plane: how fast it holds
// a thousand Kustomizations beside a plain client-go loop sending the same patches, and how much
// memory its process takes with thousands of targets. `make bench` runs it; the figures are
// recorded in docs/benchmarks.md.
package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	// The control plane is for the benchmarks; `go test ./...` runs none and should not wait for it.
	if testing.Short() || flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run())
	}
	paths, err := flux.CRDPaths()
	var root string
	if err == nil {
		root, err = testenv.RepoRoot()
	}
	if err == nil {
		paths = append(paths, filepath.Join(root, "api", "crds", "gating.sluice.dev_gates.yaml"))
		env, err = testenv.Start(testenv.Options{CRDPaths: paths, WithoutSluiceCRDs: true})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop local control plane:", err)
	}
	os.Exit(code)
}

// fastConfig is an admin config for setting up objects quickly; it is never the one measured.
func fastConfig() *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 2000
	return cfg
}

func newNamespace(b *testing.B, prefix string) string {
	b.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return ns
}

func createGate(b *testing.B, ns string, closed bool) {
	b.Helper()
	g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"}, Spec: gatingv1alpha1.GateSpec{Closed: closed}}
	if _, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), g, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

func setGateClosed(b *testing.B, ns string, closed bool) {
	b.Helper()
	patch := fmt.Sprintf(`{"spec":{"closed":%t}}`, closed)
	if _, err := env.Sluice.GatingV1alpha1().Gates(ns).Patch(context.Background(), "prod", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
}

// createKustomizations creates n Kustomizations referencing gate prod, in parallel.
func createKustomizations(b *testing.B, ns string, n int) {
	b.Helper()
	client := dynamic.NewForConfigOrDie(fastConfig()).Resource(flux.Kustomizations).Namespace(ns)
	var failed atomic.Value
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
					"metadata": map[string]any{
						"name": fmt.Sprintf("app-%05d", i), "namespace": ns,
						"annotations": map[string]any{gate.GatesAnnotation: "prod"},
					},
					"spec": map[string]any{"interval": "10m", "prune": true, "path": "./apps", "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"}},
				}}
				if _, err := client.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
}

// heldCounter watches a namespace's Kustomizations and signals when n of them carry a hold.
type heldCounter struct {
	held  sync.Map
	count atomic.Int64
	n     int64
	done  chan struct{}
	once  sync.Once
	stop  context.CancelFunc
}

func countHeld(b *testing.B, ns string, n int) *heldCounter {
	b.Helper()
	c := &heldCounter{n: int64(n), done: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	factory := metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(fastConfig()), 0, ns, nil)
	informer := factory.ForResource(flux.Kustomizations).Informer()
	observe := func(obj any) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		if _, held := m.GetAnnotations()[hold.RecordAnnotation]; !held {
			return
		}
		if _, seen := c.held.LoadOrStore(m.GetName(), true); !seen && c.count.Add(1) == c.n {
			c.once.Do(func() { close(c.done) })
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, o any) { observe(o) }}); err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return c
}

func (c *heldCounter) wait(b *testing.B, timeout time.Duration) {
	b.Helper()
	defer c.stop()
	select {
	case <-c.done:
	case <-time.After(timeout):
		b.Fatalf("only %d of %d targets held after %s", c.count.Load(), c.n, timeout)
	}
}
