package integration

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/rollback-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// chartTestValues are the chart's values for one ManifestRelease in namespace ns with RFC-0002's
// tests: values: two test definitions rendered by the chart, smoke-v2 selected by smoke-* and
// smoke-v1 matched by smoke-* too but excluded, and an external ConfigMap selected by extra-*.
// smoke-v1 holds a Job that nothing completes here (the control plane runs no Job controller):
// had it run, the tests would have failed at the 20s timeout.
func chartTestValues(ns string) string {
	return fmt.Sprintf(`manifestReleases:
  tenantNamespaces: [%[1]s]
release:
  enabled: true
  namespace: %[1]s
  serviceAccountName: releaser
  version: v1
  timeout: 20s
  source:
    configMaps:
      - name: web-v1
tests:
  enable: true
  filters:
    - name: smoke-*
    - name: extra-*
    - name: smoke-v1
      exclude: true
  testDefinitions:
    - name: smoke-v2
      yaml: |
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: smoke-v2-check
        data:
          checks: web
    - name: smoke-v1
      yaml: |
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: smoke-v1-check
        ---
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: smoke-v1-job
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: check
                  image: busybox
  testsConfigMaps:
    - name: extra-tests
`, ns)
}

// The chart renders a ManifestRelease with RFC-0002's tests: values, installed with helm, and the
// controller, running under the chart's own ServiceAccount (a token of it), runs exactly the
// tests the filters select: the selected definition and the external ConfigMap, never the
// excluded one, whose objects are never created. Disabling the release in the chart deletes it,
// and it prunes its objects as the tenant.
func TestChartReleaseRunsOnlyTheTestsItsFiltersSelect(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := fmt.Sprintf("chart-tests-%d", time.Now().UnixNano()%1_000_000)
	tenantNamespace(t, ns, "releaser")
	configMap(t, ns, "web-v1", "web.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hello\n")
	configMap(t, ns, "extra-tests", "test-yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-check\n")
	created := watchCreated(ctx, t, ns)

	helm := charts.InstallValuesForTest(t, env, "rollback-controller", "sluice-system", "rollback-controller", chartTestValues(ns))
	startReleases(t, chartServiceAccount(t), ns)
	// Before the controller stops, whatever happened: the release's finalizer needs it, and
	// helm uninstall waits for the release to be gone.
	t.Cleanup(func() { deleteRelease(t, ns, "rollback-controller") })

	var mr *rollbackv1alpha1.ManifestRelease
	require.NoError(t, testenv.Wait(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		got, err := env.Sluice.RollbackV1alpha1().ManifestReleases(ns).Get(ctx, "rollback-controller", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		mr = got
		return conditions.Get(got.Status.Conditions, rollbackv1alpha1.ConditionTestSuccess) != nil, nil
	}), "the chart's release tested: %+v", mr)
	tested := conditions.Get(mr.Status.Conditions, rollbackv1alpha1.ConditionTestSuccess)
	assert.Equal(t, metav1.ConditionTrue, tested.Status, tested.Message)
	assert.True(t, conditions.IsTrue(mr.Status.Conditions, conditions.Ready), "deployed: %+v", mr.Status.Conditions)
	assert.Contains(t, tested.Message, "smoke-v2-check")
	assert.Contains(t, tested.Message, "extra-check")
	assert.NotContains(t, tested.Message, "smoke-v1")

	seen := created()
	assert.Contains(t, seen, "ConfigMap/smoke-v2-check", "the selected definition ran")
	assert.Contains(t, seen, "ConfigMap/extra-check", "the external ConfigMap ran")
	assert.NotContains(t, seen, "ConfigMap/smoke-v1-check", "the excluded definition never ran")
	assert.NotContains(t, seen, "Job/smoke-v1-job", "the excluded definition never ran")
	for _, name := range []string{"smoke-v2-check", "extra-check"} {
		_, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "test object %s deleted after the tests: %v", name, err)
	}
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
	require.NoError(t, err, "the release's object is applied")

	// release.enabled=false removes the release; its finalizer prunes web-config as the tenant,
	// while the controller still runs (as the chart's README asks before helm uninstall).
	require.NoError(t, helm.Upgrade(ctx, "rollback-controller", "sluice-system", chartPath(t), "crds.enabled=false",
		"manifestReleases.tenantNamespaces={"+ns+"}"))
	require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := env.Sluice.RollbackV1alpha1().ManifestReleases(ns).Get(ctx, "rollback-controller", metav1.GetOptions{})
		_, cmErr := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(cmErr), nil
	}), "the release is deleted and its object pruned")
}

// deleteRelease deletes a ManifestRelease, if it is still there, and waits until it is gone.
func deleteRelease(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	releases := env.Sluice.RollbackV1alpha1().ManifestReleases(ns)
	if err := releases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete ManifestRelease %s/%s: %v", ns, name, err)
		return
	}
	assert.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := releases.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "ManifestRelease %s/%s is gone", ns, name)
}

func chartPath(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	return root + "/charts/rollback-controller"
}

// tenantNamespace creates namespace ns with ServiceAccount sa, allowed there only what a release
// of ConfigMaps with Job tests needs: ConfigMaps and Jobs, and Secrets for its snapshots.
func tenantNamespace(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	require.NoError(t, err)
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	_, err = env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func configMap(t *testing.T, ns, name, key, value string) {
	t.Helper()
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{key: value}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// watchCreated records every ConfigMap and Job created in ns from now on, as Kind/name, whether or
// not it is deleted afterwards (test objects are); the returned func gives what was seen so far.
func watchCreated(ctx context.Context, t *testing.T, ns string) func() []string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	record := func(w watch.Interface, kind string) {
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Added {
				mu.Lock()
				seen = append(seen, kind+"/"+o.GetName())
				mu.Unlock()
			}
		}
	}
	cms, err := env.Kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	jobs, err := env.Kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(cms.Stop)
	t.Cleanup(jobs.Stop)
	go record(cms, "ConfigMap")
	go record(jobs, "Job")
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// chartServiceAccount authenticates as the chart's ServiceAccount with a token of its own, so the
// controller's impersonation of a release's ServiceAccount is authorized by the chart's RBAC alone.
func chartServiceAccount(t *testing.T) *rest.Config {
	t.Helper()
	seconds := int64(3600)
	tr, err := env.Kube.CoreV1().ServiceAccounts("sluice-system").CreateToken(context.Background(), "rollback-controller",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &rest.Config{Host: env.Config.Host, BearerToken: tr.Status.Token, QPS: 100, Burst: 200,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
}

// startReleases runs the ManifestRelease reconciler alone in-process for namespace ns, with the
// chart's default --default-service-account, until the test ends; its log is printed on failure.
func startReleases(t *testing.T, cfg *rest.Config, ns string) {
	t.Helper()
	opts := options.Defaults("rollback-controller")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "127.0.0.1:0", "127.0.0.1:0"
	opts.LeaderElect, opts.Namespace = false, ns
	var log strings.Builder
	var mu sync.Mutex
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if t.Failed() {
			t.Logf("controller log:\n%s", testenv.Tail([]byte(log.String()), 80))
		}
	})
	m, err := manager.New("rollback-controller", opts, cfg, slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &log}, nil)))
	require.NoError(t, err)
	rcfg := setup.Defaults()
	rcfg.ManifestGitCacheDir, rcfg.DefaultServiceAccount = t.TempDir(), "default"
	require.NoError(t, rcfg.Validate())
	require.NoError(t, setup.ManifestReleases(m, rcfg))
	testenv.RunManager(t, m)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
