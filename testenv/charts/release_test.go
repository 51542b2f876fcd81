package charts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/testenv"
)

// The release's chart step packages every chart at the release's version, and the umbrella chart
// carries the controller charts of that release, which pull the images of that release.
func TestReleasePackagesEveryChartAtTheReleaseVersion(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	helmBin, err := testenv.Tool("helm")
	require.NoError(t, err)
	dist, home := t.TempDir(), t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "release.sh"), "charts")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "VERSION=9.8.7", "DIST="+dist, "HELM="+helmBin,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	packaged, err := filepath.Glob(filepath.Join(dist, "charts", "*.tgz"))
	require.NoError(t, err)
	controllers, err := Controllers()
	require.NoError(t, err)
	require.Len(t, packaged, len(controllers)+2, "every controller chart, the UI's and the umbrella chart")
	for _, p := range packaged {
		assert.True(t, strings.HasSuffix(p, "-9.8.7.tgz"), p)
	}

	helm := renderer(t)
	rendered, err := helm.Template(context.Background(), "sluice", "sluice-system", filepath.Join(dist, "charts", "sluice-9.8.7.tgz"), nil)
	require.NoError(t, err)
	objs, err := Objects(rendered)
	require.NoError(t, err)
	deployments := OfKind(objs, "Deployment")
	require.Len(t, deployments, len(controllers), "the umbrella chart leaves the UI out by default")
	for _, d := range deployments {
		containers := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
		image := containers[0].(map[string]any)["image"].(string)
		assert.True(t, strings.HasSuffix(image, ":9.8.7"), "%s pulls the release's image, not %s", d.GetName(), image)
	}
}
