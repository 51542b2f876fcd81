package charts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/testenv"
)

// InstallForTest installs the chart charts/<chart> of this checkout as release into namespace,
// over the CRDs the test environment already installed (crds.enabled=false), and uninstalls it
// when the test ends; the uninstall must succeed. Tests run a controller under the chart's
// ServiceAccount with env.Impersonate(namespace, release) afterwards.
func InstallForTest(t testing.TB, env *testenv.Env, release, namespace, chart string, set ...string) *Helm {
	t.Helper()
	return InstallValuesForTest(t, env, release, namespace, chart, "", set...)
}

// InstallValuesForTest is InstallForTest with values, a values file's YAML, given before set
// (empty for none): for values --set cannot write well, such as multi-line strings.
func InstallValuesForTest(t testing.TB, env *testenv.Env, release, namespace, chart, values string, set ...string) *Helm {
	t.Helper()
	var extra []string
	if values != "" {
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		extra = []string{"--values", file}
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm, err := NewHelm(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helm.Close() })
	set = append([]string{"crds.enabled=false"}, set...)
	if err := helm.InstallWith(context.Background(), release, namespace, filepath.Join(root, "charts", chart), extra, set...); err != nil {
		t.Fatalf("install chart %s: %v", chart, err)
	}
	t.Cleanup(func() {
		if err := helm.Uninstall(context.Background(), release, namespace); err != nil {
			t.Errorf("uninstall chart %s: %v", chart, err)
		}
	})
	return helm
}

// ServiceAccountForTest installs the chart as a release of its own name into sluice-system, with
// the Secrets of namespace secretsIn readable (secretAccess.namespaces: a test keeps its git
// credentials there), and returns the config of the chart's ServiceAccount, impersonated. It
// fails t when that ServiceAccount may do any of denied: the chart grants what its controller
// needs, and no more.
func ServiceAccountForTest(t testing.TB, env *testenv.Env, chart, secretsIn string, denied ...authorizationv1.ResourceAttributes) *rest.Config {
	t.Helper()
	const namespace = "sluice-system"
	InstallForTest(t, env, chart, namespace, chart, "secretAccess.namespaces={"+secretsIn+"}")
	sa := env.Impersonate(namespace, chart)
	client, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range denied {
		ok, err := Can(context.Background(), client, a)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Errorf("the chart must not allow %s %s/%s", a.Verb, a.Resource, a.Subresource)
		}
	}
	return sa
}
