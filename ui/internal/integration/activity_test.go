package integration

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestActivityNamesThePersonLive: a gate's page links its activity; with that view open, the
// same person closes the gate from a second browser, and the row of the UI's audit Event
// appears without a reload, naming them; the filters narrow it to the person and the reason.
func TestActivityNamesThePersonLive(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(context.Background(), "freeze", metav1.GetOptions{})
		return err == nil && g.Status.Open, err
	}, "the gate-controller finds the new gate open")
	me, err := env.Kube.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	user := me.Status.UserInfo.Username

	watcher := browser(t)
	signIn(watcher, t, url)
	within(watcher, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)),
		follow(`a[data-activity]`), chromedp.WaitVisible(css(`#live.on`)))
	assert.Equal(t, "/activity?kind=Gate&name=freeze&namespace="+ns,
		read(watcher, t, chromedp.Evaluate[string](`location.pathname + location.search`)), "filtered to the gate")

	actor := browser(t)
	signIn(actor, t, url)
	closeFromPage(t, actor, url, ns, "freeze", "change freeze")
	within(actor, t, chromedp.WaitVisible(css(`.done`)))

	row := `#activity tr[data-reason="ClosedFromUI"]`
	within(watcher, t, chromedp.WaitVisible(css(row)))
	assert.Equal(t, user, textOf(watcher, t, row+` [data-person]`), "the row names the person")
	assert.Contains(t, textOf(watcher, t, row), "Gate "+ns+"/freeze")
	screenshot(watcher, t, "activity")

	within(watcher, t, chromedp.Navigate(url+"/activity?namespace="+ns+"&person="+user+"&reason=closedfromui"), chromedp.WaitVisible(css(row)))
	assert.Equal(t, 1, read(watcher, t, chromedp.Evaluate[int](`document.querySelectorAll('#activity tbody tr').length`)), "one Event: this close")
	within(watcher, t, chromedp.Navigate(url+"/activity?namespace="+ns+"&person=nobody-at-all"), chromedp.WaitVisible(css(`#no-match`)))
}
