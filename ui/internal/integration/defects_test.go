package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// suspendFromPage suspends the object of the page open in b through its Suspend… button, and
// returns the kinds the form offered.
func suspendFromPage(t *testing.T, b context.Context, reason string) []string {
	t.Helper()
	within(b, t, follow(`a[data-suspend]`), chromedp.WaitVisible(css(`#f-reason`)))
	kinds := read(b, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#f-kind option')].map(o => o.value)`))
	within(b, t, chromedp.SendKeys(css(`#f-reason`), reason), chromedp.Click(css(`button[type=submit]`)),
		chromedp.WaitVisible(css(`#change`)), chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))
	return kinds
}

// TestSuspendFromEachPageOffersItsKindAndTheButtonFollows: a strategy and a gate share a name;
// Suspend… on each page offers only that page's kind, and once the UI's annotation is set the
// button says Resume… and the page says why, though spec.suspend stays false.
func TestSuspendFromEachPageOffersItsKindAndTheButtonFollows(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, Phase: "success"}})
	createGate(t, ns, "checkout")

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)))
	assert.Equal(t, []string{"PromotionStrategy"}, suspendFromPage(t, b, "payments incident"), "the strategy's page suspends the strategy only")
	assert.Equal(t, "Resume…", textOf(b, t, `a[data-suspend]`))

	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)))
	assert.Equal(t, "Suspend…", textOf(b, t, `a[data-suspend]`), "the gate is not suspended")
	assert.Equal(t, []string{"Gate"}, suspendFromPage(t, b, "auditors at work"), "the gate's page suspends the gate only")
	assert.Equal(t, "Resume…", textOf(b, t, `a[data-suspend]`), "the annotation the UI set is read")
	assert.Contains(t, textOf(b, t, `[data-suspended]`), "auditors at work")
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "checkout", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, g.Spec.Suspend, "only the annotation was set")
	assert.Equal(t, "auditors at work", g.Annotations[suspend.Annotation])
}

// TestALiveUpdateKeepsTheFocusAndWhatIsBeingTyped: a person typing in the filter box, or
// resting on a button, keeps the focus, the text and the caret while the page updates live.
func TestALiveUpdateKeepsTheFocusAndWhatIsBeingTyped(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, Phase: "success"}})
	strategies := testenvStatus{env.Sluice.PromoterV1alpha1().PromotionStrategies(ns)}
	promote := func(sha string) {
		t.Helper()
		_, err := testenv.Update(ctx, strategies, "checkout", func(p *promoterv1alpha1.PromotionStrategy) { p.Status.Environments[0].Active.DrySHA = sha })
		require.NoError(t, err)
	}
	updates := func(b context.Context) int {
		n, _ := strconv.Atoi(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-updates') || '0'`)))
		return n
	}
	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/pipelines"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.SendKeys(css(`#filter`), "chec"))
	before := updates(b)
	promote(newSHA)
	waitUpdated(b, t, before)
	state := read(b, t, chromedp.Evaluate[string](`[document.activeElement.id, document.activeElement.value, document.activeElement.selectionStart].join('|')`))
	assert.Equal(t, "filter|chec|4", state, "focus, text and caret survive the update")

	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.Focus(css(`a[data-suspend]`)))
	before = updates(b)
	promote(strings.Repeat("3", 40))
	waitUpdated(b, t, before)
	within(b, t, chromedp.WaitVisible(css(`[data-active="`+strings.Repeat("3", 40)+`"]`)))
	focused := read(b, t, chromedp.Evaluate[bool](`document.activeElement.matches('a[data-suspend]')`))
	assert.True(t, focused, "the button a person rested on keeps the focus")
}

// waitUpdated waits until the open page has swapped its <main> live more than before times.
func waitUpdated(b context.Context, t *testing.T, before int) {
	t.Helper()
	read(b, t, chromedp.Poll[bool](`Number(document.getElementById('main').getAttribute('data-updates') || 0) > `+strconv.Itoa(before)))
}
