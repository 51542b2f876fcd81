package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/testenv"
)

// The chart README's install block works pasted whole where the Gate CRD already exists without
// Helm's ownership, as on `make controlplane` (this package's control plane has it the same way).
// It is not parallel: it uses the README's own release name and namespace, which the RBAC test
// uses too, and uninstalls before the parallel tests run.
func TestChartReadmeInstallBlockWorksWhereTheCRDExists(t *testing.T) {
	testenv.SkipIfShort(t)
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "charts", "gate-controller", "README.md"))
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, block, "the README opens with an install block")

	shell := func(script string) {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "PATH="+env.BinDir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s\n%s", script, out)
	}
	shell("kubectl get crd gates.gating.sluice.dev") // there before the chart, as make controlplane leaves it
	shell(string(block[1]))
	shell("helm uninstall gate-controller --namespace sluice-system --wait")
}
