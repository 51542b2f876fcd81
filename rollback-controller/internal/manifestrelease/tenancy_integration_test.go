package manifestrelease_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
	"github.com/sluicehq/sluice/rollback-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv/charts"
)

const chartNamespace = "sluice-system"

// installChart installs the rollback-controller chart as a platform team would for tenants (the
// default: releases act as ServiceAccounts; Secrets readable by the controller nowhere), and
// returns a config that authenticates as the chart's ServiceAccount with a token of its own. A
// token rather than impersonation by the test's admin, so that the controller's own
// impersonation of tenants is authorized by the chart's RBAC and nothing else: the chart lets
// it impersonate in the tenant namespace only.
func installChart(t *testing.T, tenantNamespace string) *rest.Config {
	t.Helper()
	charts.InstallForTest(t, env, "rollback-controller", chartNamespace, "rollback-controller", "secretAccess.clusterWide=false",
		"manifestReleases.tenantNamespaces={"+tenantNamespace+"}")
	return serviceAccountToken(t, chartNamespace, "rollback-controller")
}

func serviceAccountToken(t *testing.T, namespace, name string) *rest.Config {
	t.Helper()
	seconds := int64(3600)
	tr, err := env.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := &rest.Config{Host: env.Config.Host, BearerToken: tr.Status.Token, QPS: 200, Burst: 400}
	cfg.CAData = env.Config.CAData
	return cfg
}

// tenant creates ServiceAccount name in the fixture's namespace, allowed there only what the
// tests' releases need: ConfigMaps, Deployments, and Secrets for its snapshots (no list).
func (f *fixture) tenant(name string) {
	f.t.Helper()
	_, err := env.Kube.CoreV1().ServiceAccounts(f.ns).Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	f.tenantRole(name)
}

// tenantRole grants ServiceAccount name, which exists or is created by the API server (the
// namespace's default), the tenant's rights of tenant.
func (f *fixture) tenantRole(name string) {
	f.t.Helper()
	_, err := env.Kube.RbacV1().Roles(f.ns).Create(f.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	}}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	_, err = env.Kube.RbacV1().RoleBindings(f.ns).Create(f.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: f.ns}}}, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

const escalation = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tenant-is-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: tenant, namespace: somewhere}]
`

const otherNamespace = `apiVersion: v1
kind: ConfigMap
metadata: {name: planted, namespace: kube-system}
data: {x: "1"}
`

func forbidden(mr *rollbackv1.ManifestRelease) bool {
	c := conditions.Get(mr.Status.Conditions, conditions.Stalled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == manifestrelease.ReasonForbidden
}

// A tenant allowed ConfigMaps and Secrets in its namespace deploys ConfigMaps there through a
// release, and cannot, through a release, create a ClusterRoleBinding to cluster-admin or write
// into another namespace: each is refused before anything is applied, with a condition naming
// the ServiceAccount, the verb and the object. A release naming no ServiceAccount acts as the
// namespace's default one, which may not even read the source. The controller runs under the
// chart's ServiceAccount, which cannot read a Secret of any namespace.
func TestTenantReleasesActWithTheirServiceAccountsRights(t *testing.T) {
	f := newFixture(t)
	cfg := installChart(t, f.ns)
	saClient, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	f.tenant("tenant")
	_, err = env.Kube.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password"},
		StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = saClient.CoreV1().Secrets(f.ns).Get(f.ctx, "db-password", metav1.GetOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the controller cannot read a Secret of another namespace: %v", err)
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "get", Resource: "secrets", Namespace: f.ns}, {Verb: "create", Resource: "secrets", Namespace: f.ns},
		{Verb: "create", Resource: "configmaps", Namespace: f.ns}, {Verb: "patch", Group: "apps", Resource: "deployments", Namespace: f.ns},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	} {
		ok, err := charts.Can(f.ctx, saClient, a)
		require.NoError(t, err)
		assert.False(t, ok, "the chart must not let the controller %s %s in %q", a.Verb, a.Resource, a.Namespace)
	}

	f.configMap("web-src", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  v: \"1\"\n"})
	f.configMap("admin-src", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: admin-config\n", "crb.yaml": escalation})
	f.configMap("away-src", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: away-config\n", "planted.yaml": otherNamespace})
	f.start(func(c *setup.Config) { c.DefaultServiceAccount = "default" }, cfg)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), ServiceAccountName: "tenant"})
	f.createRelease("admin", rollbackv1.ManifestReleaseSpec{Source: configMapSource("admin-src"), ServiceAccountName: "tenant"})
	f.createRelease("away", rollbackv1.ManifestReleaseSpec{Source: configMapSource("away-src"), ServiceAccountName: "tenant"})
	f.createRelease("nobody", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src")})

	f.waitRelease("web", "deployed as the tenant", deployed(1))
	assert.Equal(t, []string{"ConfigMap/web-config"}, f.liveObjects("web"))
	assert.Equal(t, []int64{1}, f.snapshotNumbers("web"), "the snapshot is written as the tenant")

	// Drift: deleted out of band, it comes back on the next look (here asked for at once).
	require.NoError(t, env.Kube.CoreV1().ConfigMaps(f.ns).Delete(f.ctx, "web-config", metav1.DeleteOptions{}))
	f.refresh("web")
	assert.Equal(t, []string{"ConfigMap/web-config"}, f.liveObjects("web"), "re-applied as the tenant")

	mr := f.waitRelease("admin", "the ClusterRoleBinding refused", forbidden)
	assert.Contains(t, condition(mr, conditions.Stalled).Message, "ServiceAccount "+f.ns+"/tenant may not create ClusterRoleBinding.rbac.authorization.k8s.io/tenant-is-admin")
	_, err = env.Kube.RbacV1().ClusterRoleBindings().Get(f.ctx, "tenant-is-admin", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no ClusterRoleBinding: %v", err)
	assert.Empty(t, f.liveObjects("admin"), "nothing is half applied")
	assert.Empty(t, f.snapshotNumbers("admin"))

	mr = f.waitRelease("away", "the write to kube-system refused", forbidden)
	assert.Contains(t, condition(mr, conditions.Stalled).Message, "ServiceAccount "+f.ns+"/tenant may not create ConfigMap/kube-system/planted")
	_, err = env.Kube.CoreV1().ConfigMaps("kube-system").Get(f.ctx, "planted", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing written to kube-system: %v", err)
	assert.Empty(t, f.liveObjects("away"))

	mr = f.waitRelease("nobody", "the default ServiceAccount may not read the source", forbidden)
	assert.Contains(t, condition(mr, conditions.Stalled).Message, "system:serviceaccount:"+f.ns+":default")
	assert.Contains(t, condition(mr, conditions.Stalled).Message, `cannot get resource "configmaps"`)
}

// The binary as the README starts it, with an admin's kubeconfig and no flag: a release that
// names no ServiceAccount acts as its namespace's default one, so a tenant who may create
// ConfigMaps and ManifestReleases cannot make itself cluster-admin (issue 32, defect 0: the
// default was once cluster-wide mode).
func TestAReleaseWithoutServiceAccountCannotEscalateUnderTheBinarysDefaults(t *testing.T) {
	f := newFixture(t)
	f.tenantRole("default")
	f.configMap("admin-src", map[string]string{"crb.yaml": escalation})
	f.start(func(c *setup.Config) { c.DefaultServiceAccount = setup.Defaults().DefaultServiceAccount })
	f.createRelease("admin", rollbackv1.ManifestReleaseSpec{Source: configMapSource("admin-src")})

	mr := f.waitRelease("admin", "the ClusterRoleBinding refused", forbidden)
	assert.Contains(t, condition(mr, conditions.Stalled).Message,
		"ServiceAccount "+f.ns+"/default may not create ClusterRoleBinding.rbac.authorization.k8s.io/tenant-is-admin")
	_, err := env.Kube.RbacV1().ClusterRoleBindings().Get(f.ctx, "tenant-is-admin", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no ClusterRoleBinding: %v", err)
}
