package suite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// upgradeToRetaggedImages tags every controller image and the UI's anew in containerd, as a new
// release's images would arrive, upgrades the umbrella release to that tag, and checks that every
// pod was replaced by one of the new tag and that the upgraded gate-controller reconciles.
func (c *Cluster) upgradeToRetaggedImages(t *testing.T) {
	tag := c.Images.Version + "-e2e-upgrade"
	refs := map[string]string{}
	for _, name := range append([]string{uiImage}, controllers...) {
		ref := c.Images.Refs[name]
		refs[name] = ref[:strings.LastIndex(ref, ":")] + ":" + tag
		_, err := c.Node.Ctr("images", "tag", ref, refs[name])
		require.NoError(t, err)
	}
	took := c.helmWait(t, "upgrade", release, c.chart("sluice"), "--namespace", system, "--reuse-values", "--set", "global.imageTag="+tag)
	figures.add("helm upgrade --wait to a re-tagged image (five controllers and the UI)", took)
	for _, name := range controllers {
		c.checkControllerPods(t, system, release, name, refs[name])
	}
	c.checkControllerPods(t, system, release, uiChart, refs[uiImage])

	ctx := context.Background()
	ns := c.namespace(t, "e2e-upgraded")
	gates := c.Sluice.GatingV1alpha1().Gates(ns)
	_, err := gates.Create(ctx, &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Name: "after-upgrade"}, Spec: gatingv1alpha1.GateSpec{Closed: true}}, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.WaitForObject(t, time.Minute, gates, "after-upgrade", func(g *gatingv1alpha1.Gate) bool {
		return g.Status.ObservedGeneration == g.Generation && !g.Status.Open
	})
}
