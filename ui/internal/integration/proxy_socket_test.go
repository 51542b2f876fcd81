package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestIdentityHeadersAreBelievedOnlyOnTheProxySocket: the same request naming alice, whom RBAC
// lets close the gate, is anonymous and refused over TCP from 127.0.0.1 (where a kubectl
// port-forward to the UI's pod arrives, past the proxy), and acts as alice, impersonated, when
// it comes on the sidecar proxy's Unix socket.
func TestIdentityHeadersAreBelievedOnlyOnTheProxySocket(t *testing.T) {
	socket := proxySocketPath(t)
	tcpURL := startUI(t, env.Config, setup.Config{Identity: setup.IdentityProxy, UserHeader: "X-Forwarded-User",
		GroupsHeader: "X-Forwarded-Groups", ProxySocket: socket})
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gate-keepers"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"gating.sluice.dev"}, Resources: []string{"gates"}, Verbs: []string{"get", "update"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gate-keepers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gate-keepers"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	status, body := closeGateAsAlice(t, http.DefaultClient, tcpURL, ns, "from a port-forward")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, "accepted only from the authenticating proxy", "over TCP the headers are refused")
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, g.Spec.Closed, "nothing changed")

	status, body = closeGateAsAlice(t, socketClient(socket), "http://sluice-ui", ns, "through the proxy")
	assert.Equal(t, http.StatusSeeOther, status, body)
	g, err = env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed)
	assert.Equal(t, "through the proxy", g.Spec.Message)
	testenv.WaitFor(t, 30*time.Second, func() (bool, error) {
		events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=freeze"})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeNormal && strings.Contains(e.Message, "by alice") && e.Reason == "ClosedFromUI" {
				return true, nil
			}
		}
		return false, nil
	}, "an Event on the gate names alice")
}

// closeGateAsAlice posts the close-gate form, as confirmed, with the headers a proxy adds for
// alice, and returns the status and body of the UI's answer (redirects not followed).
func closeGateAsAlice(t *testing.T, c *http.Client, base, ns, message string) (int, string) {
	t.Helper()
	return closeGateAs(t, c, base, ns, "alice", message)
}

// closeGateAs is closeGateAsAlice for user.
func closeGateAs(t *testing.T, c *http.Client, base, ns, user, message string) (int, string) {
	t.Helper()
	const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	form := url.Values{"csrf": {token}, "step": {"apply"}, "message": {message}}
	req, err := http.NewRequest(http.MethodPost, base+"/act/close-gate/"+ns+"/freeze", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-User", user)
	req.AddCookie(&http.Cookie{Name: "sluice_csrf", Value: token})
	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// proxySocketPath is a socket path short enough for a Unix socket's 108 bytes.
func proxySocketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ui")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "ui.sock")
}

// socketClient speaks HTTP over the Unix socket at path, as oauth2-proxy's unix:// upstream does.
func socketClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// sidecarProxy stands for oauth2-proxy in the UI's pod: it serves on loopback TCP and forwards
// every request, with the headers it carries, to the UI's socket. It returns the proxy's URL.
func sidecarProxy(t *testing.T, socket string) string {
	t.Helper()
	target, err := url.Parse("http://sluice-ui")
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = socketClient(socket).Transport
	rp.FlushInterval = -1
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}
