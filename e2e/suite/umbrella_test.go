package suite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	system  = "sluice-system"
	release = "sluice"
)

// The umbrella chart installs every controller and the web UI from the imported images; on it, in
// order: the gate story, a promotion through a Gitea pod woken by its webhook through the
// promoter's Service, its pipeline page loaded through the UI's Service, a leader failover in the middle of a promotion, a helm upgrade to a re-tagged image,
// and helm uninstall, which keeps every CRD.
func TestUmbrellaChart(t *testing.T) {
	c := cluster
	ctx := context.Background()
	require.NoError(t, c.Helm.DependencyBuild(ctx, c.chart("sluice")))
	c.namespace(t, system)
	// The charts read Secrets only in the namespaces listed (none by default), which must exist:
	// the promotion's, whose Secret holds the Gitea token and git credentials.
	appNS := c.namespace(t, "e2e-promotion")
	took := c.helmWait(t, append([]string{"install", release, c.chart("sluice"), "--namespace", system},
		setFlags(c.umbrellaValues(c.Images.Version, appNS))...)...)
	figures.add("helm install --wait, the sluice umbrella chart (all five controllers and the UI)", took)
	for _, name := range controllers {
		c.checkControllerPods(t, system, release, name, c.Images.Refs[name])
	}

	t.Run("a closed gate holds a Flux Kustomization until it opens", c.gateHoldsAKustomization)

	gitNS := c.namespace(t, "e2e-git")
	server := c.giteaPod(t, gitNS)
	var p *promotion
	t.Run("promotion dev -> staging -> prod on the Gitea pod, woken by its webhook", func(t *testing.T) {
		p = c.promotionByWebhook(t, appNS, server)
	})
	t.Run("the UI's page, through its Service, shows the pipeline", func(t *testing.T) {
		require.NotNil(t, p, "needs the promotion")
		c.uiShowsThePipeline(t, p)
	})
	t.Run("health of a running Deployment, published as a commit status on the Gitea pod", func(t *testing.T) {
		require.NotNil(t, p, "needs the promotion")
		c.healthToGitea(t, p)
	})
	t.Run("leader failover in the middle of a promotion, with no duplicate pull request or merge", func(t *testing.T) {
		require.NotNil(t, p, "needs the promotion")
		c.failover(t, p)
	})
	t.Run("no controller was refused by the API server", c.noRefusals)
	t.Run("helm upgrade to a re-tagged image", c.upgradeToRetaggedImages)
	t.Run("helm uninstall keeps the CRDs and the objects", func(t *testing.T) {
		var crds []string
		for _, name := range controllers {
			crds = append(crds, c.chartCRDs(t, name)...)
		}
		_, err := c.Helm.Run(ctx, "uninstall", release, "--namespace", system, "--wait")
		require.NoError(t, err)
		c.requireCRDs(t, crds)
		_, err = c.Sluice.PromoterV1alpha1().PromotionStrategies(appNS).Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err, "the PromotionStrategy outlives the release")
	})
}

// umbrellaValues run every controller and the web UI (off by default) from the imported images at
// tag, the promoter with its webhook receiver and one replica (the failover test scales it to two),
// the controllers that read Secrets allowed to in secretNamespace only.
func (c *Cluster) umbrellaValues(tag, secretNamespace string) []string {
	set := []string{"global.imageTag=" + tag, "promoter-controller.webhook.enabled=true", "ui.enabled=true", "ui.image.pullPolicy=Never",
		// The suite reads the UI's pages from the host, with no sign-in: anonymous reading on.
		"ui.identity.anonymous=read",
		// The health story reads the gate-controller's Deployment, in the system namespace, as a
		// ServiceAccount of the app's namespace that is granted just that (healthReader).
		"health-controller.noCrossNamespaceRefs=false"}
	for _, name := range controllers {
		set = append(set, name+".image.pullPolicy=Never")
	}
	for _, name := range []string{"commitstatus-controller", "promoter-controller", "rollback-controller"} {
		set = append(set, name+".secretAccess.namespaces={"+secretNamespace+"}")
	}
	return set
}
