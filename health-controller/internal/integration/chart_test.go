package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

const chartSHA = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"

// chartEnv starts a control plane for one test, without any Sluice CRD: the chart installs the
// HealthCheck CRD, and CommitStatus comes later.
func chartEnv(t *testing.T) *testenv.Env {
	t.Helper()
	opts := testenv.Options{WithoutSluiceCRDs: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		testCRD(certificates, "Certificate"), testCRD(widgets, "Widget"),
	}}
	paths, err := flux.CRDPaths()
	require.NoError(t, err, "Flux CRDs")
	for _, p := range paths {
		if strings.HasSuffix(p, "kustomize.toolkit.fluxcd.io_kustomizations.yaml") {
			opts.CRDPaths = append(opts.CRDPaths, p)
		}
	}
	own, err := testenv.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = own.Stop() })
	return own
}

// The user library in the chart's values: a Certificate counts only once approved.
const libraryValues = `library.checks=[{"apiVersion":"cert-manager.io/v1","kind":"Certificate",` +
	`"current":"self.metadata.?labels['approved'].orValue('') == 'yes'"}]`

// The health-controller runs under the ServiceAccount of its Helm chart, on a control plane of its
// own without the CommitStatus CRD: the chart's RBAC is enough, and the controller keeps working,
// and says so, while that CRD is missing, and publishes once it is installed.
func TestChartRBACIsEnoughAndCommitStatusCRDIsOptional(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ctx := context.Background()
	root := repoRoot(t)
	own := chartEnv(t)
	helm, err := charts.NewHelm(own)
	require.NoError(t, err)
	t.Cleanup(func() { _ = helm.Close() })
	_, err = helm.Run(ctx, "install", "health-controller", filepath.Join(root, "charts", "health-controller"),
		"--namespace", "sluice-system", "--create-namespace", "--set-json", libraryValues)
	require.NoError(t, err)

	// The controller acts as the chart's ServiceAccount: every call goes through its RBAC.
	startChartController(t, own, "sluice-system")

	ns := "shop"
	_, err = own.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// HealthChecks read as their namespace's ServiceAccount "default" (the chart's
	// defaultServiceAccount): the team lets it read everything in its namespace.
	grantReadAllIn(t, own, ns, "default")
	createRolledOutDeployment(t, own, ns, "web")
	createIn(t, own, certificates, ns, `{apiVersion: cert-manager.io/v1, kind: Certificate, metadata: {name: web-tls, labels: {approved: "no"}},
		spec: {secretName: web-tls}, status: {conditions: [{type: Ready, status: "True"}]}}`)
	createIn(t, own, schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, ns, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: shop}
spec: {interval: 5m, path: ./shop, prune: true, sourceRef: {kind: GitRepository, name: shop}}
status:
  {observedGeneration: 1, lastAppliedRevision: "main@sha1:%s",
   inventory: {entries: [{id: %s_web_apps_Deployment, v: v1}, {id: %s_web-tls_cert-manager.io_Certificate, v: v1}]}}`, chartSHA, ns, ns))
	createIn(t, own, widgets, ns, `{apiVersion: example.org/v1, kind: Widget, metadata: {name: w}, status: {ready: true}}`)

	createHCIn(t, own, ns, `
metadata: {name: shop}
spec:
  targets: [{kustomization: {name: shop}}]
  commitStatus: {key: health-shop, repositoryRef: {name: shop}, revision: {kustomization: {name: shop}}}`)
	createHCIn(t, own, ns, `
metadata: {name: widgets}
spec:
  targets: [{object: {apiVersion: example.org/v1, kind: Widget, name: w}}]`)

	// The chart's user library applies: the Certificate is not approved yet.
	hc := waitHCIn(t, own, 60*time.Second, ns, "shop", func(hc *healthv1alpha1.HealthCheck) bool {
		return hc.Status.Counts.Total == 2 && hc.Status.Counts.InProgress == 1
	})
	published := conditions.Get(hc.Status.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
	require.NotNil(t, published)
	assert.Equal(t, healthv1alpha1.ReasonCommitStatusCRDMissing, published.Reason)
	assert.Contains(t, published.Message, "health is still computed")

	labelCertificate(t, own, ns, "web-tls", "yes")
	waitHCIn(t, own, 60*time.Second, ns, "shop", func(hc *healthv1alpha1.HealthCheck) bool {
		return conditions.IsTrue(hc.Status.Conditions, conditions.Ready)
	})

	// A kind the chart does not allow is reported, not fatal.
	hc = waitHCIn(t, own, 60*time.Second, ns, "widgets", func(hc *healthv1alpha1.HealthCheck) bool { return hc.Status.Counts.Unknown == 1 })
	require.NotEmpty(t, hc.Status.Resources)
	assert.Contains(t, hc.Status.Resources[0].Message, "forbidden")
	assert.Contains(t, hc.Status.Resources[0].Message, "watch.extraRules")

	// Installing the CommitStatus CRD is noticed without a restart, and the chart may write it.
	require.NoError(t, own.InstallCRDPaths(filepath.Join(root, "api", "crds", "commitstatus.sluice.dev_commitstatuses.yaml")))
	require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		cs, err := own.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cs.Spec.SHA == chartSHA && cs.Spec.Phase == commitstatusv1alpha1.CommitStatusSuccess, nil
	}))
	hc = waitHCIn(t, own, 60*time.Second, ns, "shop", func(hc *healthv1alpha1.HealthCheck) bool {
		c := conditions.Get(hc.Status.Conditions, healthv1alpha1.ConditionCommitStatusPublished)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	assert.Equal(t, chartSHA, hc.Status.CommitStatus.SHA)
}

// startChartController runs the controller as the chart's ServiceAccount: every call goes through
// its RBAC.
func startChartController(t *testing.T, own *testenv.Env, releaseNamespace string) {
	t.Helper()
	opts := options.Defaults("health-controller")
	opts.MetricsBindAddress = "127.0.0.1:0"
	opts.HealthProbeBindAddress = "127.0.0.1:0"
	opts.LeaderElect = true
	opts.LeaderElectionNamespace = releaseNamespace
	cfg := setup.Defaults()
	cfg.LibraryNamespace = releaseNamespace
	m, err := manager.New("health-controller", opts, own.Impersonate(releaseNamespace, "health-controller"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	err = setup.Setup(m, cfg)
	require.NoError(t, err)
	testenv.RunManager(t, m)
}

func labelCertificate(t *testing.T, own *testenv.Env, ns, name, approved string) {
	t.Helper()
	u, err := own.Dynamic.Resource(certificates).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	u.SetLabels(map[string]string{"approved": approved})
	_, err = own.Dynamic.Resource(certificates).Namespace(ns).Update(context.Background(), u, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func createRolledOutDeployment(t *testing.T, own *testenv.Env, ns, name string) {
	t.Helper()
	replicas := int32(1)
	labels := map[string]string{"app": name}
	d, err := own.Kube.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
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
	_, err = own.Kube.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// grantReadAllIn lets a ServiceAccount of ns get, list and watch every kind in ns.
func grantReadAllIn(t *testing.T, own *testenv.Env, ns, serviceAccount string) {
	t.Helper()
	ctx := context.Background()
	_, err := own.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-all"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = own.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-all"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-all"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}
