package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestAPageRefreshesOnlyForWhatItShows: a strategy's page is not fetched again when another
// strategy changes, and is when its own does. A second stream in the same browser, asking for
// every strategy, tells the test that the other change was pushed before its own is made.
func TestAPageRefreshesOnlyForWhatItShows(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	shown, other := newNamespace(t), newNamespace(t)
	ctx := context.Background()
	for _, ns := range []string{shown, other} {
		createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, Phase: "success"}})
	}
	promote := func(ns, sha string) {
		t.Helper()
		_, err := testenv.Update(ctx, testenvStatus{env.Sluice.PromoterV1alpha1().PromotionStrategies(ns)}, "checkout",
			func(p *promoterv1alpha1.PromotionStrategy) { p.Status.Environments[0].Active.DrySHA = sha })
		require.NoError(t, err)
	}
	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/pipelines/"+shown+"/checkout"), chromedp.WaitVisible(css(`#live.on`)))
	watch := read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-watch')`))
	assert.Contains(t, strings.Split(watch, ","), "PromotionStrategy/"+shown+"/checkout", "the page names the strategy it shows")
	assert.NotContains(t, strings.Split(watch, ","), "PromotionStrategy", "and not every strategy")
	read(b, t, chromedp.Evaluate[bool](`window.seen = 0; window.every = new EventSource('/events?watch=PromotionStrategy');
		every.addEventListener('change', function () { seen++; }); true`))
	read(b, t, chromedp.Poll[bool](`every.readyState === 1`))
	before, _ := strconv.Atoi(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-updates') || '0'`)))

	promote(other, newSHA)
	read(b, t, chromedp.Poll[bool](`seen >= 1`))
	promote(shown, newSHA)
	waitUpdated(b, t, before)
	within(b, t, chromedp.WaitVisible(css(`[data-active="`+newSHA+`"]`)))
	after, _ := strconv.Atoi(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-updates') || '0'`)))
	assert.Equal(t, before+1, after, "one refresh, for the strategy shown; none for the other")
}
