package healthcheck_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// The README's own example kind: a check on a ConfigMap whose expression cannot be evaluated
// shows the error, instead of waiting for a status that never comes; spec.timeout has a default.
func TestEvaluationErrorsOnAConfigMapAreShown(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "flags"}, Data: map[string]string{"mode": "fast"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	created := createHC(t, ns, `
metadata: {name: flags}
spec:
  targets:
  - object: {apiVersion: v1, kind: ConfigMap, name: flags}
  healthCheckExprs:
  - {apiVersion: v1, kind: ConfigMap, current: "self.data.mode"}`)
	require.NotNil(t, created.Spec.Timeout, "the API server defaults spec.timeout")
	assert.Equal(t, 5*time.Minute, created.Spec.Timeout.Duration)

	hc := waitHC(t, ns, "flags", hasResource("ConfigMap", "flags", healthv1alpha1.StatusUnknown))
	r, _ := resource(hc, "ConfigMap", "flags")
	assert.Contains(t, r.Message, "current expression of the check for v1 ConfigMap")
	assert.Contains(t, r.Message, "got string")
	assert.NotContains(t, r.Message, "waiting for the object's controller")
}

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

// A suspended HealthCheck does not show the HEALTHY true it had: its health is not evaluated.
func TestSuspendedHealthCheckIsNotShownHealthy(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	createDeployment(t, ns, "web", nil)
	rolledOut(t, ns, "web")
	createHC(t, ns, `
metadata: {name: web}
spec:
  targets:
  - object: {apiVersion: apps/v1, kind: Deployment, name: web}`)
	hc := waitHC(t, ns, "web", ready)
	require.True(t, hc.Status.Healthy)

	updateHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) {
		hc.Annotations = map[string]string{suspend.Annotation: "audit, ask #platform"}
	})
	hc = waitHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) bool {
		return conditions.IsTrue(hc.Status.Conditions, conditions.Suspended)
	})
	assert.False(t, hc.Status.Healthy, "the HEALTHY column reads false while suspended")
	assert.Equal(t, healthv1alpha1.SummarySuspended, hc.Status.Summary)
	readyCond := conditions.Get(hc.Status.Conditions, conditions.Ready)
	require.NotNil(t, readyCond)
	assert.Equal(t, metav1.ConditionUnknown, readyCond.Status)

	updateHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) { delete(hc.Annotations, suspend.Annotation) })
	hc = waitHC(t, ns, "web", ready)
	assert.True(t, hc.Status.Healthy)
}
