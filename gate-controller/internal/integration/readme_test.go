package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// The README's "Approving one revision" block works pasted whole, with the kubectl plugins in bin/
// as `make build` leaves them, and records who approved.
func TestChartReadmeApprovalBlockWorks(t *testing.T) {
	testenv.SkipIfShort(t)
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "charts", "gate-controller", "README.md"))
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)### Approving one revision\n.*?```sh\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, block, "the README has the approval block")

	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin")+string(os.PathSeparator), "./gate-controller/cmd/kubectl-gate", "./ui/cmd/kubectl-sluice")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", string(block[1]))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "PATH="+env.BinDir+":"+os.Getenv("PATH"))
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	me, err := env.Kube.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Contains(t, string(out), "main@sha1:4c1b9f0c0f3e8a2d7b6e5f4a3b2c1d0e9f8a7b6c by "+me.Status.UserInfo.Username+" at ")
	require.NoError(t, env.Kube.CoreV1().Namespaces().Delete(context.Background(), "infra", metav1.DeleteOptions{}))
}
