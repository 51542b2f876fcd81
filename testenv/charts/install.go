package charts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
