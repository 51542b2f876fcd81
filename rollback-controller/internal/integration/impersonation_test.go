package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// The chart installed for one tenant namespace (manifestReleases.tenantNamespaces) lets the
// controller's own token impersonate that namespace's ServiceAccounts and no other: not
// kube-system's, not another tenant's, as the API server answers and enforces. A release in the
// tenant namespace still deploys under that token. Failing on the chart before issue 32, which
// granted impersonate on every ServiceAccount of the cluster.
func TestChartImpersonatesOnlyInTheTenantNamespaces(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	suffix := time.Now().UnixNano() % 1_000_000
	tenant, other := fmt.Sprintf("team-a-%d", suffix), fmt.Sprintf("team-z-%d", suffix)
	tenantNamespace(t, tenant, "releaser")
	tenantNamespace(t, other, "releaser")
	charts.InstallForTest(t, env, "rollback-controller", "sluice-system", "rollback-controller",
		"manifestReleases.tenantNamespaces={"+tenant+"}")
	cfg := chartServiceAccount(t)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	for _, c := range []struct {
		namespace, name string
		want            bool
	}{
		{tenant, "releaser", true}, {tenant, "default", true},
		{"kube-system", "default", false}, {"kube-system", "clusterrole-aggregation-controller", false},
		{other, "releaser", false}, {"sluice-system", "rollback-controller", false},
	} {
		ok, err := charts.Can(ctx, client, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts",
			Namespace: c.namespace, Name: c.name})
		require.NoError(t, err)
		assert.Equal(t, c.want, ok, "may the controller impersonate ServiceAccount %s/%s", c.namespace, c.name)
	}
	// And the API server enforces it: acting as kube-system's ServiceAccount is refused.
	stolen := rest.CopyConfig(cfg)
	stolen.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:default"}
	asKubeSystem, err := kubernetes.NewForConfig(stolen)
	require.NoError(t, err)
	_, err = asKubeSystem.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "impersonating kube-system's ServiceAccount: %v", err)
	assert.Contains(t, err.Error(), "impersonate")

	configMap(t, tenant, "web-v1", "web.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hello\n")
	startReleases(t, cfg, tenant)
	t.Cleanup(func() { deleteRelease(t, tenant, "web") })
	_, err = env.Sluice.RollbackV1alpha1().ManifestReleases(tenant).Create(ctx, &rollbackv1alpha1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: rollbackv1alpha1.ManifestReleaseSpec{ServiceAccountName: "releaser", Version: "v1",
			Source: rollbackv1alpha1.ManifestSource{ConfigMaps: []rollbackv1alpha1.ConfigMapReference{{Name: "web-v1"}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var mr *rollbackv1alpha1.ManifestRelease
	require.NoError(t, testenv.Wait(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		got, err := env.Sluice.RollbackV1alpha1().ManifestReleases(tenant).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		mr = got
		return conditions.IsTrue(got.Status.Conditions, conditions.Ready), nil
	}), "the tenant's release deploys as its ServiceAccount: %+v", mr)
	_, err = env.Kube.CoreV1().ConfigMaps(tenant).Get(ctx, "web-config", metav1.GetOptions{})
	require.NoError(t, err, "the release's object is applied")
}
