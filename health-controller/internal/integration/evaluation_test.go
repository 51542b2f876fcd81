package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
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
