package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
)

// The chart README's Argo CD block works pasted whole on a control plane with the gate-controller
// running, and prints what its comments say: held with the gate's reason and only the switch
// added, then the sync policy exactly as it was.
func TestChartReadmeArgoCDBlockHoldsAndReleasesAnApplication(t *testing.T) {
	sharedController(t)
	t.Parallel()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "charts", "gate-controller", "README.md"))
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## Argo CD Applications\n")
	require.True(t, found, "the README has an Argo CD section")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, block, "the Argo CD section has a block to paste")
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), "argocd", metav1.DeleteOptions{})
	})

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block[1])
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "PATH="+env.BinDir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var printed []string
	for _, line := range strings.Split(block[1], "\n") {
		if comment, ok := strings.CutPrefix(line, "# "); ok {
			printed = append(printed, comment)
		}
	}
	assert.Equal(t, printed, strings.Split(strings.TrimSpace(lastLines(string(out), len(printed))), "\n"), "the block prints what its comments say")
}

// lastLines are the lines the block's two kubectl get commands printed: the output ends with them.
func lastLines(out string, n int) string {
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "held: ") || strings.HasPrefix(line, "{") {
			kept = append(kept, line)
		}
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, "\n")
}
