package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// Flux writes the ":" of RBAC names as "__" in inventory ids. Such an inventory is read whole,
// and its RBAC objects are checked like the others.
func TestFluxInventoryWithRBACNamesIsChecked(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	role := "system:sluice-test:" + ns
	_, err := env.Kube.RbacV1().ClusterRoles().Create(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	createDeployment(t, ns, "metrics-server", nil)
	rolledOut(t, ns, "metrics-server")
	roleID := fmt.Sprintf("_system__sluice-test__%s_rbac.authorization.k8s.io_ClusterRole", ns)
	create(t, flux.Kustomizations, ns, kustomization(ns, shaA, roleID, ns+"_metrics-server_apps_Deployment"))
	createHC(t, ns, `
metadata: {name: metrics}
spec:
  targets:
  - kustomization: {name: apps}`)

	hc := waitHC(t, ns, "metrics", ready)
	assert.Equal(t, int32(2), hc.Status.Counts.Total)
	r, ok := resource(hc, "ClusterRole", role)
	require.True(t, ok, "the ClusterRole %s is listed under its real name", role)
	assert.Equal(t, healthv1alpha1.StatusCurrent, r.Status)
}
