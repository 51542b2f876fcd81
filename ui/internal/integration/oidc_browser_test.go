package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
)

// TestSignInThroughTheProvidersOwnPageActAndSignOutInChromium: in Chromium, a person who opens
// a page is sent to the real provider's login page, signs in there, comes back to the page they
// asked for as themselves, closes a gate as themselves, and signs out with the button; after
// that the UI asks them to sign in again.
func TestSignInThroughTheProvidersOwnPageActAndSignOutInChromium(t *testing.T) {
	base, provider := oidcUI(t, 10*time.Minute)
	gateController(t)
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	gateKeepers(t, ns)
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(context.Background(), "freeze", metav1.GetOptions{})
		return err == nil && g.Status.ObservedGeneration == g.Generation && g.Status.Open, err
	}, "the gate-controller finds the gate open")

	b := browser(t)
	within(b, t, chromedp.Navigate(base+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#username`)))
	at := read(b, t, chromedp.Location())
	assert.True(t, strings.HasPrefix(at, provider.Issuer+"/login/"), "the provider's own login page, not ours: %s", at)
	within(b, t, chromedp.SendKeys(css(`#username`), alice.Username), chromedp.SendKeys(css(`#password`), alice.Password),
		chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`.who`)))
	assert.Equal(t, base+"/gates/"+ns+"/freeze", read(b, t, chromedp.Location()), "back on the page asked for")
	assert.Equal(t, "oidc:alice", read(b, t, chromedp.Text(css(`.who`))))
	screenshot(b, t, "oidc-signed-in")

	closeFromPage(t, b, base, ns, "freeze", "alice, from Chromium")
	within(b, t, chromedp.WaitVisible(css(`.done`)))
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(context.Background(), "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed)
	assert.Equal(t, "alice, from Chromium", g.Spec.Message)

	within(b, t, chromedp.Click(css(`#sign-out`)), chromedp.WaitVisible(chromedp.Search(`//p[contains(., "You have signed out of Sluice")]`)))
	assert.Equal(t, base+"/oidc/signed-out", read(b, t, chromedp.Location()), "the provider ended its session and sent the person back")
	within(b, t, chromedp.Navigate(base+"/pipelines"), chromedp.WaitVisible(css(`#username`)))
	at = read(b, t, chromedp.Location())
	assert.True(t, strings.HasPrefix(at, provider.Issuer+"/login/"), "signed out: the next page asks to sign in again, at %s", at)
}
