package charts

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/testenv"
)

// Every controller chart, and the UI's, must lint, install alone on an empty cluster with the
// secure pod defaults and least privilege, and uninstall, keeping its CRDs; then all of them must
// install together without Helm ownership conflicts.
func TestChartsInstallAloneAndTogether(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	dirs, err := Charts()
	require.NoError(t, err)
	require.Len(t, dirs, 6, "five controller charts and the UI's")

	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run("alone/"+name, func(t *testing.T) {
			env := startEmpty(t)
			helm := newHelm(t, env)
			require.NoError(t, helm.Lint(ctx, dir))
			require.NoError(t, helm.Lint(ctx, dir, "metrics.serviceMonitor.enabled=true", "podDisruptionBudget.enabled=true",
				"networkPolicy.enabled=true", "networkPolicy.egress.enabled=true", "replicaCount=2"))

			require.NoError(t, helm.Install(ctx, name, "sluice-system", dir))
			deployment, err := env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err, "the chart creates its Deployment")
			assertSecurePod(t, deployment)
			crds := waitCRDs(t, env, ownedCRDs(t, dir))
			assertPrivilege(t, env, "sluice-system", name, name)

			require.NoError(t, helm.Uninstall(ctx, name, "sluice-system"))
			for _, crd := range crds {
				_, err := env.Dynamic.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
				assert.NoError(t, err, "CRD %s is kept on uninstall", crd)
			}
		})
	}

	t.Run("together", func(t *testing.T) {
		env := startEmpty(t)
		helm := newHelm(t, env)
		for _, dir := range dirs {
			name := filepath.Base(dir)
			require.NoError(t, helm.Install(ctx, name, "sluice-system", dir), "install %s beside the others", name)
		}
		for _, dir := range dirs {
			name := filepath.Base(dir)
			assertPrivilege(t, env, "sluice-system", name, name)
			require.NoError(t, helm.Uninstall(ctx, name, "sluice-system"))
		}
	})
}

// The umbrella chart installs every controller chart from this checkout with no network, each one
// switchable, and keeps the CRDs on uninstall; the UI's chart only when switched on.
func TestUmbrellaChartInstallsEveryController(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	umbrella := buildUmbrella(t)
	dirs, err := Controllers()
	require.NoError(t, err)
	env := startEmpty(t)
	helm := newHelm(t, env)
	require.NoError(t, helm.Lint(ctx, umbrella, "monitoring.dashboard.enabled=true", "monitoring.prometheusRules.enabled=true",
		"global.imageRegistry=registry.example", "gate-controller.podDisruptionBudget.enabled=true"))

	require.NoError(t, helm.Install(ctx, "sluice", "sluice-system", umbrella, "monitoring.dashboard.enabled=true"))
	var crds []string
	for _, dir := range dirs {
		name := filepath.Base(dir)
		deployment, err := env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-"+name, metav1.GetOptions{})
		require.NoError(t, err, "the umbrella chart installs %s", name)
		assert.Contains(t, deployment.Spec.Template.Spec.Containers[0].Image, "ghcr.io/sluicehq/"+name+":")
		assertLeastPrivilege(t, env, "sluice-system", "sluice-"+name)
		crds = append(crds, waitCRDs(t, env, ownedCRDs(t, dir))...)
	}
	_, err = env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-ui", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the UI is off by default")
	dashboard, err := env.Kube.CoreV1().ConfigMaps("sluice-system").Get(ctx, "sluice-dashboard", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", dashboard.Labels["grafana_dashboard"], "Grafana's sidecar finds it")

	// Switching one controller off removes it and nothing else.
	require.NoError(t, helm.Upgrade(ctx, "sluice", "sluice-system", umbrella, "promoter-controller.enabled=false", "ui.enabled=true"))
	_, err = env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-promoter-controller", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "promoter-controller.enabled=false removes the promoter")
	_, err = env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-gate-controller", metav1.GetOptions{})
	assert.NoError(t, err, "the gate-controller stays")
	ui, err := env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-ui", metav1.GetOptions{})
	require.NoError(t, err, "ui.enabled=true installs the UI beside the controllers")
	assert.Contains(t, ui.Spec.Template.Spec.Containers[0].Image, "ghcr.io/sluicehq/sluice-ui:")
	assertSecurePod(t, ui)
	assertUIPrivilege(t, env, "sluice-system", "sluice-ui", false)
	_, err = env.Kube.CoreV1().Services("sluice-system").Get(ctx, "sluice-ui", metav1.GetOptions{})
	assert.NoError(t, err, "the UI's Service")

	require.NoError(t, helm.Uninstall(ctx, "sluice", "sluice-system"))
	for _, crd := range crds {
		_, err := env.Dynamic.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
		assert.NoError(t, err, "CRD %s is kept on uninstall", crd)
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func startEmpty(t *testing.T) *testenv.Env {
	t.Helper()
	env, err := testenv.Start(testenv.Options{WithoutSluiceCRDs: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	return env
}

func newHelm(t *testing.T, env *testenv.Env) *Helm {
	t.Helper()
	helm, err := NewHelm(env)
	require.NoError(t, err)
	t.Cleanup(func() { _ = helm.Close() })
	return helm
}

// buildUmbrella packages the controller charts into the umbrella chart's charts/ folder, as the
// README's install from a checkout does, and returns the umbrella chart's folder.
func buildUmbrella(t *testing.T) string {
	t.Helper()
	umbrella, err := Umbrella()
	require.NoError(t, err)
	helm, err := NewHelm(&testenv.Env{})
	require.NoError(t, err)
	defer helm.Close()
	require.NoError(t, helm.DependencyBuild(context.Background(), umbrella))
	return umbrella
}

// ownedCRDs returns the names of the CRDs in the chart's files/crds, the API groups it owns.
func ownedCRDs(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "files", "crds", "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		// Files are named <group>_<plural>.yaml by controller-gen.
		group, plural, ok := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		require.True(t, ok, "CRD file %s is named <group>_<plural>.yaml", f)
		names = append(names, plural+"."+group)
	}
	return names
}

// waitCRDs waits until every named CRD is served, and returns the names.
func waitCRDs(t *testing.T, env *testenv.Env, names []string) []string {
	t.Helper()
	for _, name := range names {
		err := testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := env.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		})
		require.NoError(t, err, "CRD %s installed", name)
	}
	return names
}

// assertLeastPrivilege proves through impersonation that the ServiceAccount sa can hold its own
// Lease and no other, and cannot list Secrets, get one in a namespace no value listed (the
// default of secretAccess), write RBAC, or delete namespaces.
func assertLeastPrivilege(t *testing.T, env *testenv.Env, namespace, sa string) {
	t.Helper()
	client, err := kubernetes.NewForConfig(env.Impersonate(namespace, sa))
	require.NoError(t, err)
	ctx := context.Background()
	allowed := []authorizationv1.ResourceAttributes{
		{Namespace: namespace, Verb: "create", Group: "coordination.k8s.io", Resource: "leases"},
		{Namespace: namespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: sa + "-leader"},
		{Namespace: "apps", Verb: "create", Resource: "events"},
	}
	denied := []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets"},
		{Namespace: "kube-system", Verb: "get", Resource: "secrets"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Verb: "delete", Resource: "namespaces"},
		{Namespace: "kube-system", Verb: "update", Group: "coordination.k8s.io", Resource: "leases"},
		{Namespace: namespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "another-release-leader"},
	}
	for _, a := range allowed {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.True(t, ok, "%s may %s", sa, describe(a))
	}
	for _, a := range denied {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.False(t, ok, "%s must not %s", sa, describe(a))
	}
}

func describe(a authorizationv1.ResourceAttributes) string {
	name := ""
	if a.Name != "" {
		name = " " + a.Name
	}
	return fmt.Sprintf("%s %s.%s%s in %q", a.Verb, a.Resource, a.Group, name, a.Namespace)
}
