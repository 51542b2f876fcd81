package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
)

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
