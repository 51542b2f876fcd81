package integration

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/oidc"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestBehindOAuth2ProxyOnlyTheVerifiedIDTokenNamesThePerson: the real oauth2-proxy signs people
// in at the real provider and forwards their ID token; the UI verifies it against the issuer
// and acts as the person its claims name. Identity headers sent straight to the UI name nobody
// (and anonymous visitors are refused), and a token the issuer did not sign is refused.
func TestBehindOAuth2ProxyOnlyTheVerifiedIDTokenNamesThePerson(t *testing.T) {
	testenv.SkipIfShort(t)
	proxyClient := oidc.Client{ID: "oauth2-proxy", Secret: "oauth2-proxy-test-secret",
		RedirectURIs: []string{"http://127.0.0.1:*/oauth2/callback"}}
	provider := oidc.StartForTest(t, oidc.Options{Clients: []oidc.Client{proxyClient}, Users: []oidc.User{alice, bob}})
	c := setup.Defaults()
	c.Identity = setup.IdentityProxy
	c.OIDC.IssuerURL, c.OIDC.ClientID = provider.Issuer, proxyClient.ID
	c.OIDC.UsernameClaim, c.OIDC.UsernamePrefix, c.OIDC.GroupsPrefix = "preferred_username", "oidc:", "oidc:"
	require.NoError(t, c.Validate())
	ui := startUI(t, env.Config, c)
	proxy := oidc.StartOAuth2Proxy(t, provider, proxyClient, ui)
	gateController(t)
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	gateKeepers(t, ns)
	signedInReaders(t, ns)

	bobClient, page := signedIn(t, provider, proxy, "/gates", bob)
	assert.Contains(t, page, `<span class="who">oidc:bob</span>`, "the UI names bob from his ID token")
	waitPage(t, bobClient, proxy+"/gates/"+ns+"/freeze")
	status, body := closeGate(t, bobClient, proxy, ns, "bob tries")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, `User &#34;oidc:bob&#34; cannot`, "the API server's own refusal, as bob")

	aliceClient, _ := signedIn(t, provider, proxy, "/gates", alice)
	status, body = closeGate(t, aliceClient, proxy, ns, "alice, through oauth2-proxy")
	require.Equal(t, http.StatusSeeOther, status, body)
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(context.Background(), "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice, through oauth2-proxy", g.Spec.Message)

	forged := func(headers map[string]string) (int, string) {
		const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		form := url.Values{"csrf": {token}, "step": {"apply"}, "message": {"forged"}}
		req, err := http.NewRequest(http.MethodPost, ui+"/act/open-gate/"+ns+"/freeze", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "sluice_csrf", Value: token})
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for name, forgery := range map[string]struct {
		headers map[string]string
		says    string
	}{
		"identity headers":                {map[string]string{"X-Forwarded-User": "oidc:alice", "X-Forwarded-Groups": "oidc:release-managers"}, "Sign in first"},
		"a token the issuer never signed": {map[string]string{"Authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"}, "ID token is not valid"},
	} {
		status, body := forged(forgery.headers)
		assert.Equal(t, http.StatusUnauthorized, status, name)
		assert.Contains(t, body, forgery.says, name)
	}
	g, err = env.Sluice.GatingV1alpha1().Gates(ns).Get(context.Background(), "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed, "no forged request opened the gate")
}
