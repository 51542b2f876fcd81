package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// createGatedStrategy makes strategy checkout whose env/prod names the gate, with an active commit.
func createGatedStrategy(t *testing.T, ns, gate string, st promoterv1alpha1.EnvironmentStatus) {
	t.Helper()
	ctx := context.Background()
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "repo"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "env/prod", Gates: &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: gate}}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	st.Branch = "env/prod"
	ps.Status.Environments = []promoterv1alpha1.EnvironmentStatus{st}
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).UpdateStatus(ctx, ps, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// closedGatesInHeader is the number the header's link gives.
func closedGatesInHeader(b context.Context, t *testing.T) int {
	t.Helper()
	text := textOf(b, t, `#frozen`)
	n, err := strconv.Atoi(strings.Fields(text)[0])
	require.NoError(t, err, text)
	return n
}

// TestFrozenNowFollowsAGateClosingLive: the real gate-controller closes a gate someone closed
// by hand; the open "Frozen now" view adds it live, with its reason, the Kustomization it holds
// and the environment that names it, the header's count follows, and the pipelines list says
// by text which gate holds the environment.
func TestFrozenNowFollowsAGateClosingLive(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	ctx := context.Background()
	createGate(t, ns, "freeze")
	createKustomization(t, ns, "apps", "freeze")
	createGatedStrategy(t, ns, "freeze", promoterv1alpha1.EnvironmentStatus{Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, Phase: "success"}})
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
		return err == nil && g.Status.Open, err
	}, "the gate-controller finds the new gate open")

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/frozen"), chromedp.WaitVisible(css(`#live.on`)))
	before := closedGatesInHeader(b, t)
	section := `#frozen-` + ns + `-freeze`
	assert.Zero(t, read(b, t, chromedp.Evaluate[int](`document.querySelectorAll('`+section+`').length`)), "open: not frozen")

	_, err := testenv.Update(ctx, env.Sluice.GatingV1alpha1().Gates(ns), "freeze", func(g *gatingv1alpha1.Gate) {
		g.Spec.Closed, g.Spec.Message = true, "payments freeze"
	})
	require.NoError(t, err)
	within(b, t, chromedp.WaitVisible(css(section+` [data-reason]`)))
	assert.Contains(t, textOf(b, t, section+` [data-reason]`), "payments freeze", "the reason, as text")
	within(b, t, chromedp.WaitVisible(chromedp.Search(`//section[@id="frozen-`+ns+`-freeze"]//tr[td[contains(., "`+ns+`/apps")]]`)))
	text := textOf(b, t, section)
	assert.Contains(t, text, "until someone opens it", "closed by hand")
	assert.Contains(t, text, "env/prod", "the environment that names it")
	read(b, t, chromedp.Poll[bool](`Number(document.getElementById('frozen').textContent.split(' ')[0]) === document.querySelectorAll('section[data-gate]').length`))
	assert.Equal(t, before+1, closedGatesInHeader(b, t), "the header counts it, live")
	screenshot(b, t, "frozen")

	within(b, t, chromedp.Navigate(url+"/pipelines?q="+ns+"/checkout"), chromedp.WaitVisible(css(`[data-closed-gate]`)))
	assert.Contains(t, textOf(b, t, `[data-closed-gate]`), "closed gate "+ns+"/freeze: payments freeze")
}

// textOf reads the text of the first element selector finds in one step, so a live swap of the
// page between finding the element and reading it cannot fail the read.
func textOf(b context.Context, t *testing.T, selector string) string {
	t.Helper()
	return read(b, t, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(selector)+`) || {innerText: ""}).innerText`))
}
