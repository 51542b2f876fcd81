package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// A tenant's ManifestReleases on the real node, with the rollback-controller chart's defaults and
// the tenant's namespace listed in manifestReleases.tenantNamespaces: each
// acts as a namespaced ServiceAccount allowed ConfigMaps, Jobs and its snapshot Secrets. A new
// version whose test Job fails in a real pod is rolled back to the previous snapshot; a version
// holding a ClusterRoleBinding is refused before anything is applied, the condition naming the
// ServiceAccount, the verb and the object.
func TestTenantReleaseRollsBackAndIsRefusedWhatItMayNotDo(t *testing.T) {
	c := cluster
	ctx := context.Background()
	system := c.namespace(t, "e2e-release-controller")
	// The tenant namespace exists before the chart, which impersonates only there (a RoleBinding).
	ns := c.namespace(t, "e2e-tenant")
	name := "rollback-controller"
	c.helmWait(t, append([]string{"install", name, c.chart(name), "--namespace", system},
		setFlags(append(c.imageValues("", c.Images.Version), "manifestReleases.tenantNamespaces={"+ns+"}"))...)...)
	crds := c.chartCRDs(t, name)
	t.Cleanup(func() {
		_, err := c.Helm.Run(context.Background(), "uninstall", name, "--namespace", system, "--wait")
		assert.NoError(t, err)
		c.deleteCRDs(t, crds)
	})
	c.checkControllerPods(t, system, name, name, c.Images.Refs[name])

	c.releaser(t, ns, "releaser")
	t.Cleanup(func() { c.deleteReleases(t, ns) })

	c.configMap(t, ns, "web-v1", map[string]string{"web.yaml": webConfig("v1")})
	c.configMap(t, ns, "smoke-v1", map[string]string{"test-yaml": c.testJob("smoke-v1", "-v")})
	c.configMap(t, ns, "web-v2", map[string]string{"web.yaml": webConfig("v2")})
	c.configMap(t, ns, "smoke-v2", map[string]string{"test-yaml": c.testJob("smoke-v2", "--fail")})
	releases := c.Sluice.RollbackV1alpha1().ManifestReleases(ns)
	_, err := releases.Create(ctx, tenantRelease("web", "v1", "web-v1", "smoke-v1"), metav1.CreateOptions{})
	require.NoError(t, err)
	c.waitRelease(t, ns, "web", "v1 deployed and its test Job passed", func(mr *rollbackv1alpha1.ManifestRelease) bool {
		return mr.Status.DeployedVersion == "v1" && conditionIs(mr, "Ready", metav1.ConditionTrue) &&
			conditionIs(mr, rollbackv1alpha1.ConditionTestSuccess, metav1.ConditionTrue)
	})
	require.Equal(t, "v1", c.greeting(t, ns))

	_, err = testenv.Update(ctx, releases, "web", func(mr *rollbackv1alpha1.ManifestRelease) {
		mr.Spec = tenantRelease("web", "v2", "web-v2", "smoke-v2").Spec
	})
	require.NoError(t, err)
	mr := c.waitRelease(t, ns, "web", "v2's test Job failed and v1 was put back", func(mr *rollbackv1alpha1.ManifestRelease) bool {
		return mr.Status.LastAttemptedVersion == "v2" && mr.Status.Operation == nil && conditionIs(mr, rollbackv1alpha1.ConditionRolledBack, metav1.ConditionTrue)
	})
	assert.Equal(t, "v1", mr.Status.DeployedVersion)
	assert.Equal(t, int64(1), mr.Status.UpgradeNumber, "back on the first snapshot")
	assert.True(t, conditionIs(mr, rollbackv1alpha1.ConditionTestSuccess, metav1.ConditionFalse), "the test failed")
	assert.Contains(t, condition(mr, rollbackv1alpha1.ConditionRolledBack).Message, "smoke-v2")
	assert.Equal(t, "v1", c.greeting(t, ns), "web-config has v1's content again")

	c.configMap(t, ns, "admin-v1", map[string]string{"web.yaml": webConfig("admin"), "crb.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-tenant-is-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: releaser, namespace: e2e-tenant}]
`})
	_, err = releases.Create(ctx, tenantRelease("admin", "v1", "admin-v1", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	mr = c.waitRelease(t, ns, "admin", "refused", func(mr *rollbackv1alpha1.ManifestRelease) bool {
		s := condition(mr, "Stalled")
		return s != nil && s.Status == metav1.ConditionTrue && s.Reason == "Forbidden"
	})
	assert.Contains(t, condition(mr, "Stalled").Message,
		"ServiceAccount "+ns+"/releaser may not create ClusterRoleBinding.rbac.authorization.k8s.io/e2e-tenant-is-admin")
	_, err = c.Kube.RbacV1().ClusterRoleBindings().Get(ctx, "e2e-tenant-is-admin", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no ClusterRoleBinding: %v", err)
	assert.Empty(t, mr.Status.Inventory, "nothing applied")
	assert.Zero(t, mr.Status.UpgradeNumber, "no snapshot")
	secrets, err := c.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "rollback.sluice.dev/release=admin"})
	require.NoError(t, err)
	assert.Empty(t, secrets.Items, "no snapshot Secret")
}

func webConfig(greeting string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: " + greeting + "\n"
}

// testJob is a test Job of the pause image, which exits 0 for -v and 2 for any other argument,
// under the restricted security context, tried once.
func (c *Cluster) testJob(name, arg string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: check
          image: %s
          imagePullPolicy: Never
          args: [%q]
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
`, name, c.Images.Refs["pause"], arg)
}

func tenantRelease(name, version, source, tests string) *rollbackv1alpha1.ManifestRelease {
	mr := &rollbackv1alpha1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: rollbackv1alpha1.ManifestReleaseSpec{
			ServiceAccountName: "releaser",
			Version:            version,
			Source:             rollbackv1alpha1.ManifestSource{ConfigMaps: []rollbackv1alpha1.ConfigMapReference{{Name: source}}},
			Timeout:            &metav1.Duration{Duration: 2 * time.Minute},
		},
	}
	if tests != "" {
		mr.Spec.Test = &rollbackv1alpha1.ReleaseTest{Enable: true,
			DefinitionsFrom: []rollbackv1alpha1.TestDefinitionReference{{Kind: "ConfigMap", Name: tests, Key: "test-yaml"}}}
	}
	return mr
}

// releaser creates ServiceAccount sa in ns with a Role of its namespace: ConfigMaps and Jobs, and
// get, create and delete of Secrets for its snapshots; nothing cluster-wide.
func (c *Cluster) releaser(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	require.NoError(t, err)
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	_, err = c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (c *Cluster) configMap(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	_, err := c.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (c *Cluster) greeting(t *testing.T, ns string) string {
	t.Helper()
	cm, err := c.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "web-config", metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Data["greeting"]
}

func (c *Cluster) waitRelease(t *testing.T, ns, name, what string, ok func(*rollbackv1alpha1.ManifestRelease) bool) *rollbackv1alpha1.ManifestRelease {
	t.Helper()
	var mr *rollbackv1alpha1.ManifestRelease
	testenv.WaitFor(t, 4*time.Minute, func() (bool, error) {
		got, err := c.Sluice.RollbackV1alpha1().ManifestReleases(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mr = got
		return ok(got), nil
	}, "ManifestRelease %s/%s: %s\nstatus: %+v\n%s", ns, name, what, lazy(func() string { return fmt.Sprintf("%+v", mr.Status) }),
		lazy(func() string { return c.controllerLogs("rollback-controller") }))
	return mr
}

// deleteReleases deletes the namespace's ManifestReleases and waits for their finalizer (their
// objects pruned as the tenant) while the controller and the tenant's RoleBinding still exist.
func (c *Cluster) deleteReleases(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	releases := c.Sluice.RollbackV1alpha1().ManifestReleases(ns)
	require.NoError(t, releases.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		list, err := releases.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	}, "the tenant's ManifestReleases are deleted")
}

func condition(mr *rollbackv1alpha1.ManifestRelease, kind string) *metav1.Condition {
	for i := range mr.Status.Conditions {
		if mr.Status.Conditions[i].Type == kind {
			return &mr.Status.Conditions[i]
		}
	}
	return nil
}

func conditionIs(mr *rollbackv1alpha1.ManifestRelease, kind string, status metav1.ConditionStatus) bool {
	cond := condition(mr, kind)
	return cond != nil && cond.Status == status
}
