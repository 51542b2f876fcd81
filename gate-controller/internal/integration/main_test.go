// Package integration runs the gate-controller in-process against the real local control plane
// with the real Flux CRDs, and drives it the way people do: through objects, kubectl wait and
// the kubectl-gate plugin.
package integration

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/argocd"
	"github.com/sluicehq/sluice/testenv/flux"
)

var env *testenv.Env

// TestMain is testenv.Main with the Flux and Argo CD CRDs and, of Sluice's own, only the Gate CRD: the other
// groups' CRDs belong to other controllers, and their kinds being absent exercises the
// controller's skipping of kinds that are not installed.
func TestMain(m *testing.M) {
	flag.Parse()
	var opts testenv.Options
	if !testing.Short() {
		paths, err := flux.CRDPaths()
		var argoPaths []string
		if err == nil {
			argoPaths, err = argocd.CRDPaths()
			paths = append(paths, argoPaths...)
		}
		var root string
		if err == nil {
			root, err = testenv.RepoRoot()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts = testenv.Options{WithoutSluiceCRDs: true,
			CRDPaths: append(paths, filepath.Join(root, "api", "crds", "gating.sluice.dev_gates.yaml"))}
	}
	testenv.Main(m, opts, &env)
}

var (
	sharedOnce sync.Once
	sharedErr  error
)

// sharedController starts one gate-controller for the tests of this package, watching every
// namespace with the default targets. Each test works in its own namespace. It is stopped once
// every test has run, before the control plane, so the API server is not kept waiting on its
// watches.
func sharedController(t *testing.T) {
	t.Helper()
	testenv.SkipIfShort(t)
	sharedOnce.Do(func() {
		var m *manager.Manager
		m, sharedErr = newController("gate-controller-test", env.Config, setup.Config{}, func(o *options.Options) {
			o.WatchLabelSelector = "!" + shardLabel
		})
		if sharedErr != nil {
			return
		}
		stop := testenv.Background(m)
		testenv.OnStop(func() {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, "shared gate-controller:", err)
			}
		})
	})
	require.NoError(t, sharedErr)
}

// shardLabel marks the objects of tests that run their own controller: the shared controller
// ignores them, the way replicas shard objects with --watch-label-selector.
const shardLabel = "sluice.test/shard"

// startController runs a controller of the test's own in-process until the test ends, or stop
// is called; the test fails if it stops with an error.
func startController(t *testing.T, name string, cfg *rest.Config, c setup.Config, mutate func(*options.Options)) (stop func()) {
	t.Helper()
	m, err := newController(name, cfg, c, mutate)
	require.NoError(t, err)
	return testenv.RunManager(t, m)
}

func newController(name string, cfg *rest.Config, c setup.Config, mutate func(*options.Options)) (*manager.Manager, error) {
	opts := options.Defaults(name)
	opts.MetricsBindAddress = "127.0.0.1:0"
	opts.HealthProbeBindAddress = "127.0.0.1:0"
	opts.Workers = 4
	if mutate != nil {
		mutate(&opts)
	}
	out := io.Discard
	if os.Getenv("GATE_TEST_LOG") != "" {
		out = os.Stderr
	}
	m, err := manager.New(name, opts, cfg, slog.New(slog.NewTextHandler(out, nil)))
	if err != nil {
		return nil, err
	}
	if err := setup.Setup(m, c); err != nil {
		return nil, err
	}
	return m, nil
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), time.Now().UnixNano()%100000)
	if len(ns) > 63 {
		ns = ns[len(ns)-63:]
		ns = strings.TrimLeft(ns, "-")
	}
	_, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns
}

// createGate creates a gate; labels, if given, shard it to a test's own controller.
func createGate(t *testing.T, ns, name string, spec gatingv1alpha1.GateSpec, labels ...map[string]string) {
	t.Helper()
	g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	for _, l := range labels {
		g.Labels = l
	}
	_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), g, metav1.CreateOptions{})
	require.NoError(t, err)
}

func getGate(t *testing.T, ns, name string) *gatingv1alpha1.Gate {
	t.Helper()
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return g
}

// updateGate changes a gate's spec as a person would, retrying when the controller's status
// write got there first.
func updateGate(t *testing.T, ns, name string, mutate func(*gatingv1alpha1.Gate)) {
	t.Helper()
	_, err := testenv.Update(context.Background(), env.Sluice.GatingV1alpha1().Gates(ns), name, mutate)
	require.NoError(t, err)
}

// waitGate waits for a gate's status to satisfy cond after the controller evaluated its spec.
func waitGate(t *testing.T, ns, name string, timeout time.Duration, cond func(*gatingv1alpha1.Gate) bool) *gatingv1alpha1.Gate {
	t.Helper()
	var last *gatingv1alpha1.Gate
	err := testenv.Wait(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = g
		return g.Status.ObservedGeneration == g.Generation && cond(g), nil
	})
	require.NoError(t, err, "gate %s/%s, last status: %+v", ns, name, statusOf(last))
	return last
}

func statusOf(g *gatingv1alpha1.Gate) any {
	if g == nil {
		return nil
	}
	return g.Status
}

func isOpen(g *gatingv1alpha1.Gate) bool   { return g.Status.Open }
func isClosed(g *gatingv1alpha1.Gate) bool { return !g.Status.Open && g.Status.Reason != "" }

// object is a Flux object made from its real CRD.
type object struct {
	gvr       schema.GroupVersionResource
	kind      string
	namespace string
	name      string
}

func (o object) String() string { return o.kind + "/" + o.namespace + "/" + o.name }

// createFlux creates a minimal valid Kustomization or GitRepository with annotations; spec
// fields are added to the minimal spec, and labels, if given, shard it to a test's own controller.
func createFlux(t *testing.T, gvr schema.GroupVersionResource, ns, name string, annotations map[string]string, spec map[string]any, fieldManager string, labels ...map[string]string) object {
	t.Helper()
	o := object{gvr: gvr, namespace: ns, name: name}
	base := map[string]any{"interval": "10m"}
	switch gvr {
	case flux.Kustomizations:
		o.kind = "Kustomization"
		base["prune"] = true
		base["sourceRef"] = map[string]any{"kind": "GitRepository", "name": "repo"}
	case flux.GitRepositories:
		o.kind = "GitRepository"
		base["url"] = "https://example.com/repo.git"
	default:
		t.Fatalf("no minimal spec for %s", gvr)
	}
	for k, v := range spec {
		base[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": o.kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     base,
	}}
	u.SetAnnotations(annotations)
	for _, l := range labels {
		u.SetLabels(l)
	}
	_, err := env.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{FieldManager: fieldManager})
	require.NoError(t, err)
	return o
}

func get(t *testing.T, o object) *unstructured.Unstructured {
	t.Helper()
	u, err := env.Dynamic.Resource(o.gvr).Namespace(o.namespace).Get(context.Background(), o.name, metav1.GetOptions{})
	require.NoError(t, err)
	return u
}

// waitObject waits until cond holds for the object and returns it.
func waitObject(t *testing.T, o object, timeout time.Duration, what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := testenv.Wait(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		u, err := env.Dynamic.Resource(o.gvr).Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = u
		return cond(u), nil
	})
	var annotations map[string]string
	var spec any
	if last != nil {
		annotations, spec = last.GetAnnotations(), last.Object["spec"]
	}
	require.NoError(t, err, "%s: %s; last annotations %v, spec %v", o, what, annotations, spec)
	return last
}

func specSuspend(u *unstructured.Unstructured) (bool, bool) {
	v, found, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
	return v, found
}

// events lists the Events recorded for an object, by reason.
func events(t *testing.T, ns, name string) map[string][]string {
	t.Helper()
	list, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	require.NoError(t, err)
	byReason := map[string][]string{}
	for _, e := range list.Items {
		byReason[e.Reason] = append(byReason[e.Reason], e.Message)
	}
	return byReason
}

func waitEvent(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	var got map[string][]string
	err := testenv.Wait(context.Background(), 20*time.Second, func(context.Context) (bool, error) {
		got = events(t, ns, name)
		return len(got[reason]) > 0, nil
	})
	require.NoError(t, err, "event %s on %s/%s; events seen: %v", reason, ns, name, got)
	return got[reason]
}
