package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/healthcheck"
	"github.com/sluicehq/sluice/health-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/access"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
)

// oracleCheck is the attack of issue 32: a tenant's HealthCheck judges a ConfigMap of another
// namespace with an expression on its data, to learn that data bit by bit from the verdict.
const oracleCheck = `
metadata: {name: oracle}
spec:
  targets:
  - object: {apiVersion: v1, kind: ConfigMap, namespace: %s, name: x}
  healthCheckExprs:
  - {apiVersion: v1, kind: ConfigMap, current: "self.data.token < 'm'", failed: "self.data.token >= 'm'"}`

// verdictOf is everything a tenant sees of the check: its status and the Events about it.
func verdictOf(t *testing.T, ns string, hc *healthv1alpha1.HealthCheck) string {
	t.Helper()
	stalled := conditions.Get(hc.Status.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	events, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=oracle"})
	require.NoError(t, err)
	// The distinct Events, sorted: how often a refusal is retried depends on the machine's load,
	// what it says must not depend on the secret.
	var msgs []string
	for _, e := range events.Items {
		if m := e.Reason + ": " + e.Message; !slices.Contains(msgs, m) {
			msgs = append(msgs, m)
		}
	}
	slices.Sort(msgs)
	return fmt.Sprintf("healthy=%v summary=%q resources=%v stalled=%s: %s events=%v",
		hc.Status.Healthy, hc.Status.Summary, hc.Status.Resources, stalled.Reason, stalled.Message, msgs)
}

// A tenant's HealthCheck on a ConfigMap of kube-system is refused, and what it shows does not
// change with the secret: under the defaults because the target is in another namespace, and
// with cross-namespace references allowed because the HealthCheck's ServiceAccount may not read
// it. Failing on the code before issue 32, where the verdict followed the token.
func TestACrossNamespaceHealthOracleLearnsNothing(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ctx := context.Background()
	victim := newNamespace(t)
	for name, mode := range map[string]struct {
		mutate func(*setup.Config)
		reason string
	}{
		"under the defaults":                {func(c *setup.Config) { *c = lockedDown(c) }, healthv1alpha1.ReasonInvalidTarget},
		"with cross-namespace refs allowed": {func(c *setup.Config) { *c = lockedDown(c); c.NoCrossNamespaceRefs = false }, healthv1alpha1.ReasonAccessDenied},
	} {
		t.Run(name, func(t *testing.T) {
			var seen []string
			for _, token := range []string{"alpha", "zulu"} {
				ns := newNamespace(t)
				startController(t, ns, nil, mode.mutate)
				cm := fmt.Sprintf("x-%s", ns)
				_, err := env.Kube.CoreV1().ConfigMaps(victim).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: cm}, Data: map[string]string{"token": token}}, metav1.CreateOptions{})
				require.NoError(t, err)
				createHC(t, ns, strings.Replace(fmt.Sprintf(oracleCheck, victim), "name: x}", "name: "+cm+"}", 1))
				hc := waitHC(t, ns, "oracle", func(hc *healthv1alpha1.HealthCheck) bool {
					c := conditions.Get(hc.Status.Conditions, conditions.Stalled)
					return c != nil && c.Reason == mode.reason
				})
				v := verdictOf(t, ns, hc)
				assert.NotContains(t, v, token)
				seen = append(seen, strings.NewReplacer(ns, "NS", cm, "CM").Replace(v))
			}
			assert.Equal(t, seen[0], seen[1], "the verdict must not differ with the secret's value")
		})
	}
}

// lockedDown is the binary's defaults, on the test's namespace and library.
func lockedDown(c *setup.Config) setup.Config {
	d := setup.Defaults()
	d.LibraryNamespace = c.LibraryNamespace
	return d
}

// Under the defaults a HealthCheck reads what its namespace's ServiceAccount may read: refused
// before a Role grants it, Ready after, without a restart; and an evaluation error on a value
// never shows that value.
func TestAHealthCheckReadsWithItsServiceAccountsRights(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	startController(t, ns, nil, func(c *setup.Config) { *c = lockedDown(c) })
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "rollout"}, Data: map[string]string{"phase": "Done", "token": "hunter2-secret"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createHC(t, ns, `
metadata: {name: rollout}
spec:
  targets:
  - object: {apiVersion: v1, kind: ConfigMap, name: rollout}
  healthCheckExprs:
  - {apiVersion: v1, kind: ConfigMap, current: "self.data.phase == 'Done'"}`)
	createHC(t, ns, `
metadata: {name: leaky}
spec:
  serviceAccountName: reader
  targets:
  - object: {apiVersion: v1, kind: ConfigMap, name: rollout}
  healthCheckExprs:
  - {apiVersion: v1, kind: ConfigMap, current: "int(self.data.token) > 0"}`)
	hc := waitHC(t, ns, "rollout", func(hc *healthv1alpha1.HealthCheck) bool {
		c := conditions.Get(hc.Status.Conditions, conditions.Stalled)
		return c != nil && c.Reason == healthv1alpha1.ReasonAccessDenied
	})
	assert.Contains(t, conditions.Get(hc.Status.Conditions, conditions.Stalled).Message,
		fmt.Sprintf("ServiceAccount %s/default may not get configmaps rollout in namespace %s", ns, ns))
	waitHC(t, ns, "leaky", func(hc *healthv1alpha1.HealthCheck) bool {
		c := conditions.Get(hc.Status.Conditions, conditions.Stalled)
		return c != nil && c.Reason == healthv1alpha1.ReasonAccessDenied && strings.Contains(c.Message, "ServiceAccount "+ns+"/reader")
	})

	grantRead(t, ns, "default", "reader")
	// Seen at the next recheck: RBAC is not watched.
	waitHCIn(t, env, healthcheckRecheckWait, ns, "rollout", func(hc *healthv1alpha1.HealthCheck) bool {
		return conditions.IsTrue(hc.Status.Conditions, conditions.Ready)
	})
	hc = waitHCIn(t, env, healthcheckRecheckWait, ns, "leaky", hasResource("ConfigMap", "rollout", healthv1alpha1.StatusUnknown))
	r, _ := resource(hc, "ConfigMap", "rollout")
	assert.Contains(t, r.Message, "a value cannot be converted")
	assert.NotContains(t, r.Message, "hunter2")
	events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		assert.NotContains(t, e.Message, "hunter2")
	}
}

// healthcheckRecheckWait outlasts the recheck of a refused HealthCheck and the answers remembered.
const healthcheckRecheckWait = healthcheck.AccessRecheck + access.DefaultTTL + time.Minute

// grantRead lets the ServiceAccounts of ns get and list ConfigMaps there.
func grantRead(t *testing.T, ns string, serviceAccounts ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "health-read"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "health-read"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "health-read"}}
	for _, sa := range serviceAccounts {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: ns})
	}
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
}
