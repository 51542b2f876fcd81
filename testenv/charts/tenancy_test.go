package charts

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// rulesOf returns the rules of every rendered ClusterRole and Role, by "<Kind> <namespace>".
func rulesOf(t *testing.T, rendered string) map[string][]rbacv1.PolicyRule {
	t.Helper()
	objs, err := Objects(rendered)
	require.NoError(t, err)
	out := map[string][]rbacv1.PolicyRule{}
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, o := range OfKind(objs, kind) {
			var role rbacv1.ClusterRole
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role))
			key := kind + " " + o.GetNamespace()
			out[key] = append(out[key], role.Rules...)
		}
	}
	return out
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

// The health-controller chart is locked down by default: HealthChecks read as their namespace's
// ServiceAccount "default", in their namespace only; the controller may ask SubjectAccessReviews
// and may impersonate no one. The open modes are explicit values.
func TestHealthChartReadsAsTheTenantByDefault(t *testing.T) {
	helm := renderer(t)
	dir := chartDir(t, "health-controller")
	args := func(set ...string) []string {
		out, err := helm.Template(context.Background(), "health-controller", "sluice-system", dir, nil, set...)
		require.NoError(t, err, "%v", set)
		objs, err := Objects(out)
		require.NoError(t, err)
		a, err := ContainerArgs(objs, "health-controller")
		require.NoError(t, err)
		rules := rulesOf(t, out)["ClusterRole "]
		assert.True(t, grants(rules, "authorization.k8s.io", "subjectaccessreviews", "create"), "%v", set)
		assert.False(t, grants(rules, "", "serviceaccounts", "impersonate"), "%v", set)
		return a
	}
	a := args()
	assert.Contains(t, a, "--no-cross-namespace-refs=true")
	assert.Contains(t, a, "--default-service-account=default")
	a = args("defaultServiceAccount=", "noCrossNamespaceRefs=false")
	assert.Contains(t, a, "--no-cross-namespace-refs=false")
	assert.Contains(t, a, "--default-service-account=")
	assertRefused(t, helm, dir, "defaultServiceAccount", "defaultServiceAccount=Not_A_Name")
}

// impersonationGrants returns where the rendered chart lets its ServiceAccount impersonate
// ServiceAccounts: "*" for a ClusterRoleBinding, else each RoleBinding's namespace.
func impersonationGrants(t *testing.T, rendered string) []string {
	t.Helper()
	objs, err := Objects(rendered)
	require.NoError(t, err)
	impersonating := map[string]bool{}
	for _, o := range OfKind(objs, "ClusterRole") {
		var role rbacv1.ClusterRole
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role))
		if grants(role.Rules, "", "serviceaccounts", "impersonate") {
			impersonating[role.Name] = true
		}
	}
	var where []string
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range OfKind(objs, kind) {
			var b rbacv1.RoleBinding
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b))
			if b.RoleRef.Kind != "ClusterRole" || !impersonating[b.RoleRef.Name] {
				continue
			}
			if kind == "ClusterRoleBinding" {
				where = append(where, "*")
			} else {
				where = append(where, b.Namespace)
			}
		}
	}
	return where
}

// The rollback-controller chart lets its ServiceAccount impersonate ServiceAccounts only in the
// tenant namespaces listed (or the watchNamespace), none by default, and in every namespace only
// with manifestReleases.impersonateClusterWide.
func TestRollbackChartImpersonatesPerTenantNamespace(t *testing.T) {
	helm := renderer(t)
	dir := chartDir(t, "rollback-controller")
	for _, c := range []struct {
		set  []string
		want []string
	}{
		{nil, nil},
		{[]string{"manifestReleases.tenantNamespaces={team-a,team-b}"}, []string{"team-a", "team-b"}},
		{[]string{"watchNamespace=apps"}, []string{"apps"}},
		{[]string{"watchNamespace=apps", "manifestReleases.tenantNamespaces={team-a}"}, []string{"team-a"}},
		{[]string{"manifestReleases.impersonateClusterWide=true", "manifestReleases.tenantNamespaces={team-a}"}, []string{"*"}},
	} {
		out, err := helm.Template(context.Background(), "rollback-controller", "sluice-system", dir, nil, c.set...)
		require.NoError(t, err, "%v", c.set)
		assert.Equal(t, c.want, impersonationGrants(t, out), "%v", c.set)
	}
	assertRefused(t, helm, dir, "tenantNamespaces", "manifestReleases.tenantNamespaces={Team_A}")
	assertRefused(t, helm, dir, "impersonateClusterWide", "manifestReleases.impersonateClusterWide=maybe")
}
