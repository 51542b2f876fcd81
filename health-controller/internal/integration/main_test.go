// Package integration runs the health-controller in-process against the real local control plane
// (testenv), with the RFC's custom resources and Flux's Kustomization CRD, and drives it through
// objects as people do; chart_test.go runs it under its Helm chart's ServiceAccount.
package integration

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/healthcheck"
	"github.com/sluicehq/sluice/health-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

var env *testenv.Env

// The custom resources of the RFC stories are defined here, with open schemas: the controller
// must work from what the API server serves, not from Go types.
var (
	certificates  = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	sealedSecrets = schema.GroupVersionResource{Group: "bitnami.com", Version: "v1alpha1", Resource: "sealedsecrets"}
	clusters      = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	widgets       = schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "widgets"}
	gadgets       = schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "gadgets"}
	applications  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Only the Sluice CRDs this controller reads or writes: the others belong to other
	// controllers, and a broken one must not stop these tests.
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts := testenv.Options{WithoutSluiceCRDs: true, CRDPaths: []string{
		filepath.Join(root, "api", "crds", "health.sluice.dev_healthchecks.yaml"),
		filepath.Join(root, "api", "crds", "commitstatus.sluice.dev_commitstatuses.yaml"),
	}, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		testCRD(certificates, "Certificate"),
		testCRD(sealedSecrets, "SealedSecret"),
		testCRD(clusters, "Cluster"),
		testCRD(widgets, "Widget"),
		testCRD(gadgets, "Gadget"),
		testCRD(applications, "Application"),
	}}
	if !testing.Short() {
		paths, err := flux.CRDPaths()
		if err != nil {
			fmt.Fprintln(os.Stderr, "Flux CRDs:", err)
			os.Exit(1)
		}
		for _, p := range paths {
			// The source kinds too: the real source-controller (realflux_test.go) watches them all.
			if strings.HasSuffix(p, "kustomize.toolkit.fluxcd.io_kustomizations.yaml") || strings.Contains(filepath.Base(p), "source.toolkit.fluxcd.io_") {
				opts.CRDPaths = append(opts.CRDPaths, p)
			}
		}
	}
	testenv.Main(m, opts, &env)
}

// testCRD is a namespaced kind with a status subresource and an open schema.
func testCRD(gvr schema.GroupVersionResource, kind string) *apiextensionsv1.CustomResourceDefinition {
	open := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gvr.Resource + "." + gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvr.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: gvr.Resource, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvr.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &open,
				}},
			}},
		},
	}
}

type running struct {
	r       *healthcheck.Reconciler
	m       *manager.Manager
	metrics string
}

// startController runs the health-controller in this process, watching HealthChecks in ns only,
// so that tests run side by side without seeing each other's objects.
func startController(t *testing.T, ns string, cfg *rest.Config, mutate func(*setup.Config)) *running {
	t.Helper()
	opts := options.Defaults("health-controller")
	opts.Namespace = ns
	opts.MetricsBindAddress = "127.0.0.1:0"
	opts.HealthProbeBindAddress = "127.0.0.1:0"
	opts.LeaderElect = false
	c := setup.Defaults()
	c.LibraryNamespace = ns
	// These tests are of evaluation, not of tenancy: HealthChecks read with the controller's own
	// rights, as with --default-service-account=. tenancy_test.go runs the locked-down default.
	c.DefaultServiceAccount = ""
	if mutate != nil {
		mutate(&c)
	}
	if cfg == nil {
		cfg = env.Config
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tw := &testWriter{t: t}
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(tw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m, err := manager.New("health-controller", opts, cfg, log)
	require.NoError(t, err)
	r, err := setup.HealthChecks(m, c)
	require.NoError(t, err)
	// Cleanups run last first: the log is closed once the controller has stopped.
	t.Cleanup(func() { tw.closed.Store(true) })
	testenv.RunManager(t, m)
	addrs, err := m.Probes.Addrs(t.Context())
	require.NoError(t, err)
	return &running{r: r, m: m, metrics: "http://" + addrs.Metrics + "/metrics"}
}

type testWriter struct {
	t      *testing.T
	closed atomic.Bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	if !w.closed.Load() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

var nsCounter atomic.Int64

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("hc-%d-%d", time.Now().UnixNano()%1_000_000, nsCounter.Add(1))
	_, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns
}

// obj decodes YAML into an object.
func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
	return &unstructured.Unstructured{Object: m}
}

// create creates the object from YAML and, when it has a status, writes it through the status
// subresource as the object's own controller would.
func create(t *testing.T, gvr schema.GroupVersionResource, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	return createIn(t, env, gvr, ns, doc)
}

// createIn is create on control plane e.
func createIn(t *testing.T, e *testenv.Env, gvr schema.GroupVersionResource, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	u := obj(t, doc)
	status, hasStatus := u.Object["status"]
	created, err := e.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	if hasStatus {
		created.Object["status"] = status
		created, err = e.Dynamic.Resource(gvr).Namespace(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	return created
}

// setStatus replaces the object's status from YAML, as its controller would.
func setStatus(t *testing.T, gvr schema.GroupVersionResource, ns, name, statusYAML string) {
	t.Helper()
	var status map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(statusYAML), &status))
	u, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	u.Object["status"] = status
	_, err = env.Dynamic.Resource(gvr).Namespace(ns).UpdateStatus(context.Background(), u, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// setSpec changes a spec field, which bumps metadata.generation.
func setSpec(t *testing.T, gvr schema.GroupVersionResource, ns, name string, value any, field ...string) int64 {
	t.Helper()
	u, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(u.Object, value, append([]string{"spec"}, field...)...))
	u, err = env.Dynamic.Resource(gvr).Namespace(ns).Update(context.Background(), u, metav1.UpdateOptions{})
	require.NoError(t, err)
	return u.GetGeneration()
}

func createHC(t *testing.T, ns, doc string) *healthv1alpha1.HealthCheck {
	t.Helper()
	return createHCIn(t, env, ns, doc)
}

func createHCIn(t *testing.T, e *testenv.Env, ns, doc string) *healthv1alpha1.HealthCheck {
	t.Helper()
	var hc healthv1alpha1.HealthCheck
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &hc))
	created, err := e.Sluice.HealthV1alpha1().HealthChecks(ns).Create(context.Background(), &hc, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

func updateHC(t *testing.T, ns, name string, mutate func(*healthv1alpha1.HealthCheck)) {
	t.Helper()
	_, err := testenv.Update(context.Background(), env.Sluice.HealthV1alpha1().HealthChecks(ns), name, mutate)
	require.NoError(t, err)
}

// waitHC waits until cond holds for the HealthCheck, and fails with its last status otherwise.
func waitHC(t *testing.T, ns, name string, cond func(*healthv1alpha1.HealthCheck) bool) *healthv1alpha1.HealthCheck {
	t.Helper()
	return waitHCIn(t, env, 30*time.Second, ns, name, cond)
}

func waitHCIn(t *testing.T, e *testenv.Env, timeout time.Duration, ns, name string, cond func(*healthv1alpha1.HealthCheck) bool) *healthv1alpha1.HealthCheck {
	t.Helper()
	var last *healthv1alpha1.HealthCheck
	err := testenv.Wait(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		hc, err := e.Sluice.HealthV1alpha1().HealthChecks(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = hc
		return cond(hc), nil
	})
	if err != nil {
		var b []byte
		if last != nil {
			b, _ = yaml.Marshal(last.Status)
		}
		require.NoError(t, err, "HealthCheck %s/%s; last status:\n%s", ns, name, b)
	}
	return last
}

// resource returns the listed health of the named target.
func resource(hc *healthv1alpha1.HealthCheck, kind, name string) (healthv1alpha1.ResourceHealth, bool) {
	for _, r := range hc.Status.Resources {
		if r.Kind == kind && r.Name == name {
			return r, true
		}
	}
	return healthv1alpha1.ResourceHealth{}, false
}

func hasResource(kind, name string, status healthv1alpha1.ResourceStatus) func(*healthv1alpha1.HealthCheck) bool {
	return func(hc *healthv1alpha1.HealthCheck) bool {
		r, ok := resource(hc, kind, name)
		return ok && r.Status == status && hc.Status.ObservedGeneration == hc.Generation
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// scrapeUntil scrapes url until its metrics match pattern, for up to 30 s, and returns the last
// scrape: metrics are recorded after the status write lands, so a test that has seen the status
// can be a moment ahead of them.
func scrapeUntil(t *testing.T, url, pattern string) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if body = scrape(t, url); re.MatchString(body) {
			break
		}
	}
	return body
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	return root
}

func chartDir(t *testing.T) string { return filepath.Join(repoRoot(t), "charts", "health-controller") }
