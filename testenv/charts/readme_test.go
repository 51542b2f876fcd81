package charts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/testenv"
)

// readmeBlock returns the first sh block after heading in a chart's README.
func readmeBlock(t *testing.T, chart, heading string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(chartDir(t, chart), "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)" + regexp.QuoteMeta(heading) + "\n.*?```sh\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "%s's README has a sh block under %q", chart, heading)
	return string(m[1])
}

// shell runs script as one bash script, -euo pipefail, from the repository's root, with kubectl
// and helm of env on PATH, as a person pastes a README block into a shell.
func shell(t *testing.T, env *testenv.Env, script string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "PATH="+env.BinDir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", script, out)
}

var manifestReleases = schema.GroupVersionResource{Group: "rollback.sluice.dev", Version: "v1alpha1", Resource: "manifestreleases"}

// The rollback-controller README's block that renders a release and its tests from the chart's
// values works pasted whole: where make controlplane installed the CRDs without Helm, and on a
// cluster with no Sluice CRD at all, where the chart installs them before its release. The
// release it renders reads the two definitions, then the team's ConfigMap, with the filters.
func TestRollbackReadmeReleaseFromValuesBlock(t *testing.T) {
	testenv.SkipIfShort(t)
	block := readmeBlock(t, "rollback-controller", "### A release and its tests from the chart's values (RFC-0002)")
	for name, opts := range map[string]testenv.Options{"CRDs without Helm": {}, "no CRDs": {WithoutSluiceCRDs: true}} {
		t.Run(name, func(t *testing.T) {
			env, err := testenv.Start(opts)
			require.NoError(t, err)
			t.Cleanup(func() { _ = env.Stop() })
			shell(t, env, block)

			mr, err := env.Dynamic.Resource(manifestReleases).Namespace("team-b").Get(context.Background(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			refs, _, _ := unstructured.NestedSlice(mr.Object, "spec", "test", "definitionsFrom")
			var names []string
			for _, r := range refs {
				names = append(names, r.(map[string]any)["name"].(string))
			}
			assert.Equal(t, []string{"smoke-v2", "smoke-v1", "shared-tests"}, names)
			filters, _, _ := unstructured.NestedSlice(mr.Object, "spec", "test", "filters")
			assert.Len(t, filters, 3)
			sa, _, _ := unstructured.NestedString(mr.Object, "spec", "serviceAccountName")
			assert.Equal(t, "releaser", sa)
		})
	}
}
