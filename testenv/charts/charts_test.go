package charts

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/testenv"
)

// Every chart must lint, install alone on an empty cluster and uninstall, keeping its CRDs; then
// all charts must install together without Helm ownership conflicts.
func TestChartsInstallAloneAndTogether(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	dirs, err := All()
	require.NoError(t, err)
	require.NotEmpty(t, dirs)

	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run("alone/"+name, func(t *testing.T) {
			env := startEmpty(t)
			helm := newHelm(t, env)
			require.NoError(t, helm.Lint(ctx, dir))
			require.NoError(t, helm.Lint(ctx, dir, "metrics.serviceMonitor.enabled=true", "podDisruptionBudget.enabled=true", "replicaCount=2"))

			require.NoError(t, helm.Install(ctx, name, "sluice-system", dir))
			_, err := env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err, "the chart creates its Deployment")
			crds := chartCRDs(t, env, dir)
			assertLeastPrivilege(t, env, name)

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
			assertLeastPrivilege(t, env, name)
			require.NoError(t, helm.Uninstall(ctx, name, "sluice-system"))
		}
	})
}

func TestValuesSchemaRejectsBadValues(t *testing.T) {
	testenv.SkipIfShort(t)
	dirs, err := All()
	require.NoError(t, err)
	env := startEmpty(t)
	helm := newHelm(t, env)
	for _, dir := range dirs {
		err := helm.Lint(context.Background(), dir, "workers=0")
		assert.ErrorContains(t, err, "workers", "%s: values.schema.json rejects workers=0", filepath.Base(dir))
		err = helm.Lint(context.Background(), dir, "log.format=xml")
		assert.ErrorContains(t, err, "format", "%s: values.schema.json rejects log.format=xml", filepath.Base(dir))
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

// chartCRDs returns the names of the CRDs the chart installed, after checking each is served.
func chartCRDs(t *testing.T, env *testenv.Env, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		// Files are named <group>_<plural>.yaml by controller-gen.
		base := filepath.Base(f)
		group, plural := splitCRDFile(base)
		names = append(names, plural+"."+group)
	}
	for _, name := range names {
		err := testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := env.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		})
		require.NoError(t, err, "CRD %s installed", name)
	}
	return names
}

func splitCRDFile(base string) (group, plural string) {
	base = base[:len(base)-len(".yaml")]
	for i := len(base) - 1; i >= 0; i-- {
		if base[i] == '_' {
			return base[:i], base[i+1:]
		}
	}
	return "", base
}

// assertLeastPrivilege proves through impersonation that the chart's ServiceAccount can hold its
// Lease and cannot read Secrets cluster-wide, write RBAC, or delete namespaces.
func assertLeastPrivilege(t *testing.T, env *testenv.Env, release string) {
	t.Helper()
	client, err := kubernetes.NewForConfig(env.Impersonate("sluice-system", release))
	require.NoError(t, err)
	ctx := context.Background()
	allowed := []authorizationv1.ResourceAttributes{
		{Namespace: "sluice-system", Verb: "update", Group: "coordination.k8s.io", Resource: "leases"},
		{Namespace: "apps", Verb: "create", Resource: "events"},
	}
	denied := []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Verb: "delete", Resource: "namespaces"},
		{Namespace: "kube-system", Verb: "update", Group: "coordination.k8s.io", Resource: "leases"},
	}
	for _, a := range allowed {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.True(t, ok, "%s may %s", release, describe(a))
	}
	for _, a := range denied {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.False(t, ok, "%s must not %s", release, describe(a))
	}
}

func describe(a authorizationv1.ResourceAttributes) string {
	return fmt.Sprintf("%s %s.%s in %q", a.Verb, a.Resource, a.Group, a.Namespace)
}
