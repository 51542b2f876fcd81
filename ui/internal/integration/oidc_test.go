package integration

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/runtime/httpserve"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/oidc"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// People of the OpenID provider in these tests. alice's group may close gates in the test's
// namespace (gateKeepers); bob has no right there.
var (
	alice = oidc.User{Username: "alice", Password: "alice-password", Email: "alice@example.com", Groups: []string{"release-managers", "system:masters"}}
	bob   = oidc.User{Username: "bob", Password: "bob-password", Email: "bob@example.com"}
)

const (
	oidcClientID = "sluice-ui"
	oidcSecret   = "sluice-ui-test-secret"
)

// oidcUI starts the real OpenID provider and the UI in OIDC mode in front of it, with the claim
// mapping a cluster would use (prefixed names, as the API server's flags make them), and
// returns the UI's base URL.
func oidcUI(t *testing.T, sessionTTL time.Duration) (string, *oidc.Provider) {
	t.Helper()
	testenv.SkipIfShort(t)
	provider := oidc.StartForTest(t, oidc.Options{
		Clients: []oidc.Client{{ID: oidcClientID, Secret: oidcSecret,
			RedirectURIs: []string{"http://127.0.0.1:*/oidc/callback", "http://127.0.0.1:*/oidc/signed-out"}}},
		Users: []oidc.User{alice, bob},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	secret := filepath.Join(t.TempDir(), "client-secret")
	require.NoError(t, os.WriteFile(secret, []byte(oidcSecret+"\n"), 0o600))
	c := setup.Defaults()
	c.Identity = setup.IdentityOIDC
	c.OIDC.IssuerURL, c.OIDC.ClientID, c.OIDC.ClientSecretFile = provider.Issuer, oidcClientID, secret
	c.OIDC.RedirectURL = base + "/oidc/callback"
	c.OIDC.UsernameClaim, c.OIDC.UsernamePrefix, c.OIDC.GroupsPrefix = "preferred_username", "oidc:", "oidc:"
	c.OIDC.SessionTTL = sessionTTL
	require.NoError(t, c.Validate())
	serveUI(t, c, ln)
	return base, provider
}

// serveUI runs the UI in-process on ln, as startUI does.
func serveUI(t *testing.T, c setup.Config, ln net.Listener) {
	t.Helper()
	opts := options.Defaults("sluice-ui")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "127.0.0.1:0", "127.0.0.1:0"
	out := io.Discard
	if os.Getenv("UI_TEST_LOG") != "" {
		out = os.Stderr
	}
	m, err := manager.New("sluice-ui", opts, env.Config, slog.New(slog.NewTextHandler(out, nil)))
	require.NoError(t, err)
	h, err := setup.NewHandler(m, c)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- httpserve.Serve(ctx, ln, h) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	testenv.RunManager(t, m)
}

// gateKeepers lets the (prefixed) release-managers group close gates in ns.
func gateKeepers(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gate-keepers"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"gating.sluice.dev"}, Resources: []string{"gates"}, Verbs: []string{"get", "update"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gate-keepers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gate-keepers"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "oidc:release-managers"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitAllowed(t, "oidc:alice", []string{"oidc:release-managers"},
		authorizationv1.ResourceAttributes{Verb: "update", Group: "gating.sluice.dev", Resource: "gates", Namespace: ns, Name: "freeze"})
}

// signedInReaders lets every signed-in person read ns (bob too): the UI shows each person what
// they may read.
func signedInReaders(t *testing.T, ns string) {
	t.Helper()
	readers(t, ns, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:authenticated"})
}

// signedIn is a cookie-keeping client that signed user in through the provider's login page,
// starting from page; it returns the client and the page it landed on.
func signedIn(t *testing.T, provider *oidc.Provider, base, page string, user oidc.User) (*http.Client, string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Timeout: time.Minute}
	resp, err := provider.LogIn(context.Background(), hc, base+page, user)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, base+page, resp.Request.URL.String(), "back on the page asked for")
	return hc, string(body)
}

// waitPage waits until hc's person gets u whole (the UI's informers have seen the object).
func waitPage(t *testing.T, hc *http.Client, u string) string {
	t.Helper()
	var body []byte
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		resp, err := hc.Get(u)
		if err != nil {
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && resp.Request.URL.String() == u, err
	}, "the UI serves "+u)
	return string(body)
}

// closeGate posts the confirmed close-gate form as hc's person; redirects are not followed.
func closeGate(t *testing.T, hc *http.Client, base, ns, message string) (int, string) {
	t.Helper()
	const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	u, err := url.Parse(base)
	require.NoError(t, err)
	if hc.Jar != nil {
		hc.Jar.SetCookies(u, []*http.Cookie{{Name: "sluice_csrf", Value: token, Path: "/"}})
	}
	form := url.Values{"csrf": {token}, "step": {"apply"}, "message": {message}}
	req, err := http.NewRequest(http.MethodPost, base+"/act/close-gate/"+ns+"/freeze", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if hc.Jar == nil {
		req.AddCookie(&http.Cookie{Name: "sluice_csrf", Value: token})
	}
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestOIDCSignInImpersonatesThePersonTheIDTokenNames: a person signs in on the real provider's
// page (authorization code flow with PKCE); the UI acts as the user and groups of their ID
// token, prefixed as the API server would, so RBAC decides: bob is refused with the API
// server's own 403, alice closes the gate and its Event names her. The provider's system:masters
// group never reaches the API server. Nobody unsigned reads or acts.
func TestOIDCSignInImpersonatesThePersonTheIDTokenNames(t *testing.T) {
	base, provider := oidcUI(t, 10*time.Minute)
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	gateKeepers(t, ns)
	signedInReaders(t, ns)
	ctx := context.Background()

	anonymous := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := anonymous.Get(base + "/gates/" + ns + "/freeze")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.Equal(t, "/oidc/login?next=%2Fgates%2F"+ns+"%2Ffreeze", resp.Header.Get("Location"), "a page sends an unsigned person to sign in")
	status, _ := closeGate(t, anonymous, base, ns, "anonymous")
	assert.Equal(t, http.StatusUnauthorized, status, "an unsigned person cannot act")

	bobClient, page := signedIn(t, provider, base, "/gates", bob)
	assert.Contains(t, page, `<span class="who">oidc:bob</span>`)
	waitPage(t, bobClient, base+"/gates/"+ns+"/freeze")
	status, body := closeGate(t, bobClient, base, ns, "bob tries")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, `User &#34;oidc:bob&#34; cannot`, "the API server's own refusal, as bob")

	aliceClient, page := signedIn(t, provider, base, "/gates", alice)
	assert.Contains(t, page, `<span class="who">oidc:alice</span>`)
	assert.Contains(t, page, `id="sign-out"`, "a signed-in person can sign out")
	status, body = closeGate(t, aliceClient, base, ns, "alice freezes")
	require.Equal(t, http.StatusSeeOther, status, body)
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed)
	assert.Equal(t, "alice freezes", g.Spec.Message)
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=freeze"})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeNormal && strings.Contains(e.Message, "by oidc:alice") {
				return true, nil
			}
		}
		return false, nil
	}, "an Event on the gate names oidc:alice")
}

// sessionCookie is the value of hc's session cookie for base, or "".
func sessionCookie(t *testing.T, hc *http.Client, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	for _, c := range hc.Jar.Cookies(u) {
		if c.Name == "sluice_session" {
			return c.Value
		}
	}
	return ""
}

// TestOIDCSessionsRefreshRefuseTamperingAndSignOut: a session due for confirmation is renewed
// with the refresh token (a new sealed cookie, the same person); a changed cookie is nobody's;
// sign-out takes only this origin's POST, clears the cookie and ends the provider's session
// through its end_session_endpoint, which sends the person back to the UI's signed-out page.
func TestOIDCSessionsRefreshRefuseTamperingAndSignOut(t *testing.T) {
	base, provider := oidcUI(t, time.Second)
	hc, _ := signedIn(t, provider, base, "/pipelines", alice)
	first := sessionCookie(t, hc, base)
	require.NotEmpty(t, first)

	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		page := waitPage(t, hc, base+"/pipelines")
		return strings.Contains(page, `<span class="who">oidc:alice</span>`) && sessionCookie(t, hc, base) != first, nil
	}, "the session is renewed with the refresh token once due, and still names alice")

	noRedirect := func(c *http.Client) *http.Client {
		cp := *c
		cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return &cp
	}
	tampered := []byte(sessionCookie(t, hc, base))
	tampered[len(tampered)/2] ^= 0x01
	req, err := http.NewRequest(http.MethodGet, base+"/pipelines", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: "sluice_session", Value: string(tampered)})
	resp, err := noRedirect(&http.Client{}).Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode, "a changed cookie names nobody: sign in")
	assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/oidc/login"))

	logout := func(header, value string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, base+"/oidc/logout", strings.NewReader("csrf=x"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set(header, value)
		resp, err := noRedirect(hc).Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(body)
	}
	resp, _ = logout("Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "another site cannot sign alice out")
	assert.NotEmpty(t, sessionCookie(t, hc, base))

	resp, page := logout("Origin", base)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	m := regexp.MustCompile(`id="end-session" href="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, page)
	end, err := url.Parse(html.UnescapeString(m[1]))
	require.NoError(t, err)
	assert.Equal(t, provider.Issuer+"/end_session", end.Scheme+"://"+end.Host+end.Path)
	assert.NotEmpty(t, end.Query().Get("id_token_hint"), "the provider is told whose session ends")
	assert.Empty(t, sessionCookie(t, hc, base), "the session cookie is cleared")
	resp, err = hc.Get(end.String())
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, base+"/oidc/signed-out", resp.Request.URL.String(), "the provider accepted the sign-out and sent alice back")
	assert.Contains(t, string(body), "You have signed out of Sluice")

	resp, err = noRedirect(hc).Get(base + "/pipelines")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode, "signed out: the next page asks to sign in again")
}
