package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
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

// TestAPersonSignedInSeesOnlyTheirNamespaceInChromium: bob signs in on the real provider's page;
// a RoleBinding lets him read namespace A only. In Chromium his pipelines, gates and search show
// A's objects and no name of namespace B, and B's pipeline page is not found.
func TestAPersonSignedInSeesOnlyTheirNamespaceInChromium(t *testing.T) {
	base, _ := oidcUI(t, 10*time.Minute)
	a, b := newNamespace(t), newNamespace(t)
	for _, ns := range []string{a, b} {
		createStrategy(t, ns)
		createGate(t, ns, "freeze")
	}
	readers(t, a, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "oidc:bob"})

	br := browser(t)
	within(br, t, chromedp.Navigate(base+"/pipelines?q=checkout"), chromedp.WaitVisible(css(`#username`)))
	within(br, t, chromedp.SendKeys(css(`#username`), bob.Username), chromedp.SendKeys(css(`#password`), bob.Password),
		chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`.who`)))
	assert.Equal(t, "oidc:bob", read(br, t, chromedp.Text(css(`.who`))))
	within(br, t, chromedp.WaitVisible(css(`a[href="/pipelines/`+a+`/checkout"]`)))
	screenshot(br, t, "per-user-pipelines")
	for _, page := range []string{"/pipelines?q=checkout", "/gates", "/search?q=checkout", "/search?q=freeze"} {
		within(br, t, chromedp.Navigate(base+page), chromedp.WaitVisible(css(`main h1`)))
		text := read(br, t, chromedp.Text(css(`main`)))
		assert.Contains(t, text, a+"/", "bob sees namespace A on %s", page)
		assert.NotContains(t, text, b+"/", "bob sees no name of namespace B on %s", page)
	}
	within(br, t, chromedp.Navigate(base+"/pipelines/"+b+"/checkout"), chromedp.WaitVisible(css(`main h1`)))
	assert.Contains(t, read(br, t, chromedp.Text(css(`main h1`))), "Not found", "B's pipeline, as if it did not exist")
}
