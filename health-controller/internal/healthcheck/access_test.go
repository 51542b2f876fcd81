package healthcheck

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/access"
	"github.com/sluicehq/sluice/pkg/conditions"
)

// namespaceRBAC allows a ServiceAccount to read its own namespace only, and records the asks.
type namespaceRBAC struct{ asked []access.Request }

func (n *namespaceRBAC) Allowed(_ context.Context, sa access.ServiceAccount, req access.Request) (bool, error) {
	n.asked = append(n.asked, req)
	return req.Namespace == sa.Namespace, nil
}

const crossNamespaceCheck = `
metadata: {name: web}
spec:
  targets:
  - object: {apiVersion: v1, kind: ConfigMap, namespace: kube-system, name: x}
  healthCheckExprs:
  - {apiVersion: v1, kind: ConfigMap, current: "self.data.token < 'm'"}
`

func TestATargetItsServiceAccountMayNotReadStallsTheCheckUnread(t *testing.T) {
	for _, token := range []string{"a-secret", "z-secret"} {
		t.Run(token, func(t *testing.T) {
			u := newUnit(t, crossNamespaceCheck,
				fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: kube-system}, data: {token: %s}}`, token))
			rbac := &namespaceRBAC{}
			u.r.Access, u.r.DefaultServiceAccount = rbac, "default"
			hc, requeue := u.reconcile(t)
			stalled := conditions.Get(hc.Status.Conditions, conditions.Stalled)
			require.NotNil(t, stalled)
			assert.Equal(t, healthv1alpha1.ReasonAccessDenied, stalled.Reason)
			assert.Equal(t, "ServiceAccount apps/default may not get configmaps x in namespace kube-system (ConfigMap target): nothing of it is read. "+
				"Grant that ServiceAccount read access with a Role and RoleBinding in the target's namespace, or name another in spec.serviceAccountName",
				stalled.Message, "the same words whatever the value")
			assert.Empty(t, hc.Status.Resources)
			assert.False(t, hc.Status.Healthy)
			assert.Equal(t, AccessRecheck, requeue, "a RoleBinding granted later is seen")
			assert.Empty(t, u.watches.owned["apps/web"], "nothing is watched for it")
			require.NotEmpty(t, rbac.asked)
			assert.Equal(t, access.Request{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "x"}, rbac.asked[0])
		})
	}
}

func TestSpecServiceAccountNameAndTheControllersOwnRights(t *testing.T) {
	u := newUnit(t, fmt.Sprintf(configMapCheck, `"self.data.mode == 'fast'"`), flags)
	rbac := &namespaceRBAC{}
	u.r.Access, u.r.DefaultServiceAccount = rbac, "default"
	hc, _ := u.reconcile(t)
	assert.True(t, conditions.IsTrue(hc.Status.Conditions, conditions.Ready), "its own namespace is readable")

	// An empty default is the controller's own rights: nothing is asked.
	u = newUnit(t, crossNamespaceCheck, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: kube-system}, data: {token: a}}`)
	rbac = &namespaceRBAC{}
	u.r.Access = rbac
	hc, _ = u.reconcile(t)
	assert.Nil(t, conditions.Get(hc.Status.Conditions, conditions.Stalled))
	assert.Empty(t, rbac.asked)

	sa, ok := u.r.serviceAccountOf(&healthv1alpha1.HealthCheck{Spec: healthv1alpha1.HealthCheckSpec{ServiceAccountName: "reader"}})
	assert.True(t, ok)
	assert.Equal(t, "reader", sa.Name)
}
