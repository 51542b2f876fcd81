// Package charttest runs the health-controller under the ServiceAccount of its Helm chart, on a
// control plane without the CommitStatus CRD, to prove that the chart's RBAC is enough and that
// the controller keeps working, and says so, while that CRD is missing.
package charttest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
	"github.com/sluicehq/sluice/testenv/flux"
)

var env *testenv.Env

var (
	certificates = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	widgets      = schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "widgets"}
)

const sha = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"

// No Sluice CRD at first: the chart installs the HealthCheck CRD, and CommitStatus comes later.
func TestMain(m *testing.M) {
	flag.Parse()
	opts := testenv.Options{WithoutSluiceCRDs: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		openCRD(certificates, "Certificate"), openCRD(widgets, "Widget"),
	}}
	if !testing.Short() {
		paths, err := flux.CRDPaths()
		if err != nil {
			fmt.Fprintln(os.Stderr, "Flux CRDs:", err)
			os.Exit(1)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "kustomize.toolkit.fluxcd.io_kustomizations.yaml") {
				opts.CRDPaths = append(opts.CRDPaths, p)
			}
		}
	}
	testenv.Main(m, opts, &env)
}

func openCRD(gvr schema.GroupVersionResource, kind string) *apiextensionsv1.CustomResourceDefinition {
	open := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gvr.Resource + "." + gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvr.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: gvr.Resource, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvr.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &open}},
			}},
		},
	}
}

// The user library in the chart's values: a Certificate counts only once approved.
const libraryValues = `library.checks=[{"apiVersion":"cert-manager.io/v1","kind":"Certificate",` +
	`"current":"self.metadata.?labels['approved'].orValue('') == 'yes'"}]`

func TestChartRBACIsEnoughAndCommitStatusCRDIsOptional(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	helm, err := charts.NewHelm(env)
	require.NoError(t, err)
	t.Cleanup(func() { _ = helm.Close() })
	_, err = helm.Run(ctx, "install", "health-controller", filepath.Join(root, "charts", "health-controller"),
		"--namespace", "sluice-system", "--create-namespace", "--set-json", libraryValues)
	require.NoError(t, err)

	// The controller acts as the chart's ServiceAccount: every call goes through its RBAC.
	startController(t, "sluice-system")

	ns := "shop"
	_, err = env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createRolledOutDeployment(t, ns, "web")
	create(t, certificates, ns, `{apiVersion: cert-manager.io/v1, kind: Certificate, metadata: {name: web-tls, labels: {approved: "no"}},
		spec: {secretName: web-tls}, status: {conditions: [{type: Ready, status: "True"}]}}`)
	create(t, schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, ns, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: shop}
spec: {interval: 5m, path: ./shop, prune: true, sourceRef: {kind: GitRepository, name: shop}}
status:
  lastAppliedRevision: "main@sha1:%s"
  inventory: {entries: [{id: %s_web_apps_Deployment, v: v1}, {id: %s_web-tls_cert-manager.io_Certificate, v: v1}]}`, sha, ns, ns))
	create(t, widgets, ns, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {ready: true}}`)

	createHC(t, ns, `
metadata: {name: shop}
spec:
  targets: [{kustomization: {name: shop}}]
  commitStatus: {key: health-shop, repositoryRef: {name: shop}, revision: {kustomization: {name: shop}}}`)
	createHC(t, ns, `
metadata: {name: widgets}
spec:
  targets: [{object: {apiVersion: example.org/v1, kind: Widget, name: w}}]`)

	// The chart's user library applies: the Certificate is not approved yet.
	hc := waitHC(t, ns, "shop", func(hc *healthv1alpha1.HealthCheck) bool {
		return hc.Status.Counts.Total == 2 && hc.Status.Counts.InProgress == 1
	})
	published := conditions.Get(hc.Status.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
	require.NotNil(t, published)
	assert.Equal(t, healthv1alpha1.ReasonCommitStatusCRDMissing, published.Reason)
	assert.Contains(t, published.Message, "health is still computed")

	labelCertificate(t, ns, "web-tls", "yes")
	waitHC(t, ns, "shop", func(hc *healthv1alpha1.HealthCheck) bool {
		return conditions.IsTrue(hc.Status.Conditions, conditions.Ready)
	})

	// A kind the chart does not allow is reported, not fatal.
	hc = waitHC(t, ns, "widgets", func(hc *healthv1alpha1.HealthCheck) bool { return hc.Status.Counts.Unknown == 1 })
	require.NotEmpty(t, hc.Status.Resources)
	assert.Contains(t, hc.Status.Resources[0].Message, "forbidden")
	assert.Contains(t, hc.Status.Resources[0].Message, "watch.extraRules")

	// Installing the CommitStatus CRD is noticed without a restart, and the chart may write it.
	require.NoError(t, env.InstallCRDPaths(filepath.Join(root, "api", "crds", "commitstatus.sluice.dev_commitstatuses.yaml")))
	require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		cs, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cs.Spec.SHA == sha && cs.Spec.Phase == commitstatusv1alpha1.CommitStatusSuccess, nil
	}))
	hc = waitHC(t, ns, "shop", func(hc *healthv1alpha1.HealthCheck) bool {
		c := conditions.Get(hc.Status.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	assert.Equal(t, sha, hc.Status.CommitStatus.SHA)
}

func startController(t *testing.T, releaseNamespace string) {
	t.Helper()
	opts := options.Defaults("health-controller")
	opts.MetricsBindAddress = "127.0.0.1:0"
	opts.HealthProbeBindAddress = "127.0.0.1:0"
	opts.LeaderElect = true
	opts.LeaderElectionNamespace = releaseNamespace
	cfg := setup.Defaults()
	cfg.LibraryNamespace = releaseNamespace
	m, err := manager.New("health-controller", opts, env.Impersonate(releaseNamespace, "health-controller"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	err = setup.Setup(m, cfg)
	require.NoError(t, err)
	testenv.RunManager(t, m)
}

func create(t *testing.T, gvr schema.GroupVersionResource, ns, doc string) {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
	u := &unstructured.Unstructured{Object: m}
	status, hasStatus := m["status"]
	created, err := env.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	if hasStatus {
		created.Object["status"] = status
		_, err = env.Dynamic.Resource(gvr).Namespace(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
}

func labelCertificate(t *testing.T, ns, name, approved string) {
	t.Helper()
	u, err := env.Dynamic.Resource(certificates).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	u.SetLabels(map[string]string{"approved": approved})
	_, err = env.Dynamic.Resource(certificates).Namespace(ns).Update(context.Background(), u, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func createRolledOutDeployment(t *testing.T, ns, name string) {
	t.Helper()
	replicas := int32(1)
	labels := map[string]string{"app": name}
	d, err := env.Kube.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/example/web:1.0.0"}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
	_, err = env.Kube.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func createHC(t *testing.T, ns, doc string) {
	t.Helper()
	var hc healthv1alpha1.HealthCheck
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &hc))
	_, err := env.Sluice.HealthV1alpha1().HealthChecks(ns).Create(context.Background(), &hc, metav1.CreateOptions{})
	require.NoError(t, err)
}

func waitHC(t *testing.T, ns, name string, cond func(*healthv1alpha1.HealthCheck) bool) *healthv1alpha1.HealthCheck {
	t.Helper()
	var last *healthv1alpha1.HealthCheck
	err := testenv.Wait(context.Background(), 60*time.Second, func(ctx context.Context) (bool, error) {
		hc, err := env.Sluice.HealthV1alpha1().HealthChecks(ns).Get(ctx, name, metav1.GetOptions{})
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
