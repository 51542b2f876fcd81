package suite

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/e2e/node"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/oidc"
)

// oidcPerson signs in on the provider's page. The UI names people by their email claim, as the
// chart README's OIDC block does, and may impersonate them into the developers group only.
var oidcPerson = oidc.User{Username: "alice", Password: "e2e-alice-password", Email: "alice@e2e.example", Groups: []string{"developers"}}

// The UI's chart in OIDC mode, installed as its README's OIDC block says, behind a real OpenID
// provider (hack/tools/oidc-provider) serving HTTPS on the node's address with a certificate of
// the cluster CA, which the UI's pod trusts from a ConfigMap mounted into /etc/ssl/certs: the UI
// and the host's Chromium reach the same issuer URL. An anonymous request gets no page. A person
// opens the UI through `kubectl sluice ui --port-forward` on a loopback address (the redirect URL
// registered at the provider), signs in on the provider's own login page in Chromium, lands on
// the page asked for as themselves, sees the pipeline of the namespace a RoleBinding lets them
// read and nothing of another namespace that has one too, and signs out.
func TestUIChartSignsInThroughOIDC(t *testing.T) {
	c := cluster
	c.sluiceCRDs(t)
	ns := c.namespace(t, "e2e-ui-oidc")
	team, other := c.namespace(t, "e2e-oidc-team"), c.namespace(t, "e2e-oidc-other")
	for _, n := range []string{team, other} {
		c.strategy(t, n, "checkout")
	}
	c.sluiceReaders(t, team, "sluice-readers", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: oidcPerson.Email})

	listen := freeLoopbackAddress(t)
	base := "http://" + listen
	provider, certPEM := c.issuer(t, base)
	c.installOIDCUI(t, ns, provider.Issuer, base)

	for _, path := range []string{"/pipelines", "/pipelines/" + team + "/checkout", "/search?q=checkout"} {
		c.anonymousGetsNoPage(t, ns, path, team, other)
	}

	c.portForwardUI(t, ns, listen)
	b := browser(t, certPEM)
	within(b, t, chromedp.Navigate(base+"/pipelines"), chromedp.WaitVisible(css(`#username`)))
	at := read(b, t, chromedp.Location())
	require.True(t, strings.HasPrefix(at, provider.Issuer+"/login/"), "the provider's own login page, at the issuer the UI verifies: %s", at)
	within(b, t, chromedp.SendKeys(css(`#username`), oidcPerson.Username), chromedp.SendKeys(css(`#password`), oidcPerson.Password),
		chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`.who`)))
	assert.Equal(t, base+"/pipelines", read(b, t, chromedp.Location()), "back on the page asked for")
	assert.Equal(t, oidcPerson.Email, read(b, t, chromedp.Text(css(`.who`))), "signed in as the email claim names them")

	within(b, t, chromedp.WaitVisible(css(`a[href="/pipelines/`+team+`/checkout"]`)))
	for _, page := range []string{"/pipelines", "/search?q=checkout"} {
		within(b, t, chromedp.Navigate(base+page), chromedp.WaitVisible(css(`main h1`)))
		text := read(b, t, chromedp.Text(css(`main`)))
		assert.Contains(t, text, team+"/", "the person sees the namespace they may read on %s", page)
		assert.NotContains(t, text, other+"/", "the person sees no name of the other namespace on %s", page)
	}
	within(b, t, chromedp.Navigate(base+"/pipelines/"+other+"/checkout"), chromedp.WaitVisible(css(`main h1`)))
	assert.Contains(t, read(b, t, chromedp.Text(css(`main h1`))), "Not found", "the other namespace's pipeline, as if it did not exist")

	within(b, t, chromedp.Click(css(`#sign-out`)), chromedp.WaitVisible(chromedp.Search(`//p[contains(., "You have signed out of Sluice")]`)))
	within(b, t, chromedp.Navigate(base+"/pipelines"), chromedp.WaitVisible(css(`#username`)))
	at = read(b, t, chromedp.Location())
	assert.True(t, strings.HasPrefix(at, provider.Issuer+"/login/"), "signed out: the next page asks to sign in again, at %s", at)
}

// issuer starts the OpenID provider on the node's address, which pods reach, over HTTPS with a
// certificate of the cluster CA for that address, knowing the UI as a client whose redirect URLs
// are under base, and oidcPerson. It returns the provider and its certificate.
func (c *Cluster) issuer(t *testing.T, base string) (*oidc.Provider, []byte) {
	t.Helper()
	certPEM, keyPEM, err := c.Node.IssueServing("oidc-provider", nil, net.IP(node.NodeIP.AsSlice()))
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	provider := oidc.StartForTest(t, oidc.Options{
		Clients: []oidc.Client{{ID: "sluice-ui", Secret: oidcClientSecret,
			RedirectURIs: []string{base + "/oidc/callback", base + "/oidc/signed-out"}}},
		Users:  []oidc.User{oidcPerson},
		Listen: net.JoinHostPort(node.NodeIP.String(), "0"), TLSCertFile: certFile, TLSKeyFile: keyFile,
	})
	require.True(t, strings.HasPrefix(provider.Issuer, "https://"+node.NodeIP.String()+":"), "an https issuer on the node's address: %s", provider.Issuer)
	return provider, certPEM
}

// oidcClientSecret is the UI's client secret at the test's provider, which lives as long as the test.
var oidcClientSecret = "e2e-" + base64.RawURLEncoding.EncodeToString(randomBytes(18))

// installOIDCUI installs the UI's chart in OIDC mode in ns, as the chart README's OIDC block
// does: the client secret and cookie key in a Secret, the email claim as the user name, the
// developers group the only one it may impersonate into, and the cluster CA (the issuer's) mounted
// into /etc/ssl/certs from a ConfigMap.
func (c *Cluster) installOIDCUI(t *testing.T, ns, issuer, base string) {
	t.Helper()
	ctx := context.Background()
	caPEM, err := c.Node.CAPEM()
	require.NoError(t, err)
	_, err = c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sluice-ui-oidc"},
		StringData: map[string]string{"client-secret": oidcClientSecret, "cookie-key": base64.StdEncoding.EncodeToString(randomBytes(32))}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sluice-ui-issuer-ca"},
		Data: map[string]string{"issuer-ca.crt": string(caPEM)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	set := append(c.imageValues("", c.Images.Version),
		"identity.mode=oidc", "identity.oidc.issuerURL="+issuer, "identity.oidc.clientID=sluice-ui",
		"identity.oidc.redirectURL="+base+"/oidc/callback",
		"identity.oidc.clientSecret.name=sluice-ui-oidc", "identity.oidc.cookieKey.name=sluice-ui-oidc",
		"identity.oidc.usernameClaim=email", "identity.impersonate.groups={platform-team,developers}",
		"extraVolumes[0].name=issuer-ca", "extraVolumes[0].configMap.name=sluice-ui-issuer-ca",
		"extraVolumeMounts[0].name=issuer-ca", "extraVolumeMounts[0].mountPath=/etc/ssl/certs", "extraVolumeMounts[0].readOnly=true")
	took := c.helmWait(t, append([]string{"install", uiImage, c.chart(uiChart), "--namespace", ns}, setFlags(set)...)...)
	t.Cleanup(func() {
		_, err := c.Helm.Run(ctx, "uninstall", uiImage, "--namespace", ns, "--wait")
		assert.NoError(t, err)
	})
	figures.add("helm install --wait, the UI in OIDC mode (reads the issuer's discovery at start)", took)
	c.checkControllerPods(t, ns, uiImage, uiChart, c.Images.Refs[uiImage])
}

// anonymousGetsNoPage asks the UI's Service for path with no session, as a client in the cluster
// would: the answer is a redirect to sign in, no page, and no name of a namespace it did not ask
// about.
func (c *Cluster) anonymousGetsNoPage(t *testing.T, ns, path string, namespaces ...string) {
	t.Helper()
	svc, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), uiImage, metav1.GetOptions{})
	require.NoError(t, err, "the UI's Service")
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + path
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var resp *http.Response
	var body []byte
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		resp, err = client.Get(url)
		if err != nil {
			return false, nil // kube-proxy may not have programmed the Service yet
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil, nil
	}, "GET %s answers", url)
	assert.Equal(t, http.StatusFound, resp.StatusCode, "an anonymous GET %s is sent to sign in:\n%s", path, body)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/oidc/login?next="), "to the UI's sign-in, not %q", resp.Header.Get("Location"))
	assert.NotContains(t, string(body), "<main", "an anonymous GET %s gets no page", path)
	for _, n := range namespaces {
		if !strings.Contains(path, n) { // the redirect carries the path asked for back
			assert.NotContains(t, string(body), n, "an anonymous GET %s shows nothing of namespace %s", path, n)
		}
	}
}

// portForwardUI runs `kubectl sluice ui --port-forward` (ui/cmd/kubectl-sluice, built here) as
// the admin, forwarding listen to the UI installed in ns, until the test ends.
func (c *Cluster) portForwardUI(t *testing.T, ns, listen string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-sluice")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/kubectl-sluice")
	build.Dir = filepath.Join(c.Root, "ui")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build kubectl-sluice:\n%s", out)

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "ui", "--port-forward", "--namespace", ns, "--listen", listen, "--open=false",
		"--kubeconfig", c.Node.Paths.AdminKubeconfig())
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "through a port-forward: http://"+listen+"/") {
				ready <- sc.Text()
			}
		}
	}()
	select {
	case line := <-ready:
		t.Log(line)
	case <-exited:
		t.Fatalf("kubectl sluice ui --port-forward ended:\n%s", stderr.Bytes())
	case <-time.After(2 * time.Minute):
		t.Fatalf("kubectl sluice ui --port-forward did not forward %s within 2m:\n%s", listen, stderr.Bytes())
	}
}

// sluiceCRDs installs every Sluice CRD (api/crds), which the UI's pages read, and deletes them when
// the test ends, so that the umbrella chart, later, installs its own.
func (c *Cluster) sluiceCRDs(t *testing.T) {
	t.Helper()
	var names []string
	for _, chart := range controllers {
		names = append(names, c.chartCRDs(t, chart)...)
	}
	t.Cleanup(func() { c.deleteCRDs(t, names) })
	require.NoError(t, c.Env.InstallCRDPaths(filepath.Join(c.Root, "api", "crds")))
}

// strategy creates a PromotionStrategy of one environment in ns.
func (c *Cluster) strategy(t *testing.T, ns, name string) {
	t.Helper()
	_, err := c.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(context.Background(), &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "repo"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// freeLoopbackAddress is a loopback address with a port nothing listens on now.
func freeLoopbackAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// css is a CSS selector.
func css(s string) chromedp.CSS { return chromedp.CSS(s) }
