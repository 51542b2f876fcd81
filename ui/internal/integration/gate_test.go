package integration

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

var (
	gateControllerOnce sync.Once
	gateControllerErr  error
)

// gateController runs the real gate-controller as a process, from make build's bin/ or built
// now, for every test of the package.
func gateController(t *testing.T) {
	t.Helper()
	gateControllerOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			gateControllerErr = err
			return
		}
		bin := filepath.Join(root, "bin", "gate-controller")
		if _, err := os.Stat(bin); err != nil {
			bin = filepath.Join(os.TempDir(), "sluice-ui-test-gate-controller")
			build := exec.Command("go", "build", "-o", bin, "./gate-controller/cmd/gate-controller")
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				gateControllerErr = err
				t.Log(string(out))
				return
			}
		}
		cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if os.Getenv("UI_TEST_LOG") == "" {
			cmd.Stdout, cmd.Stderr = nil, nil
		}
		if gateControllerErr = cmd.Start(); gateControllerErr != nil {
			return
		}
		testenv.OnStop(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	})
	require.NoError(t, gateControllerErr)
}

func createGate(t *testing.T, ns, name string) {
	t.Helper()
	_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(),
		&gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func createKustomization(t *testing.T, ns, name, gate string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": flux.Kustomizations.GroupVersion().String(), "kind": "Kustomization",
		"metadata": map[string]any{"name": name, "namespace": ns, "annotations": map[string]any{"gating.sluice.dev/gates": gate}},
		"spec":     map[string]any{"interval": "10m", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "repo"}},
	}}
	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitKustomizationHeld waits until the gate-controller's hold (spec.suspend) is on Kustomization
// ns/name.
func waitKustomizationHeld(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	testenv.WaitFor(t, timeout, func() (bool, error) {
		u, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		suspended, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
		return suspended, nil
	}, "the gate-controller holds the Kustomization")
}

// closeFromPage closes a gate through its page: the form, then the confirmation.
func closeFromPage(t *testing.T, b context.Context, url, ns, gate, message string) {
	t.Helper()
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/"+gate), chromedp.WaitVisible(css(`#live.on`)),
		follow(`a[href^="/act/close-gate/"]`), chromedp.WaitVisible(css(`#f-message`)),
		chromedp.SendKeys(css(`#f-message`), message), chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)))
	change := read(b, t, chromedp.Text(css(`#change`)))
	assert.Contains(t, change, "Gate "+ns+"/"+gate+": closed with the message \""+message+"\"", "the confirmation says exactly what changes")
	within(b, t, chromedp.Click(css(`#confirm`)), chromedp.WaitReady(css(`body`)))
}

// TestAGateClosedFromThePageHoldsAKustomization: local mode, as the kubeconfig's user; the real
// gate-controller holds the Kustomization that names the gate, and the page shows it closed.
func TestAGateClosedFromThePageHoldsAKustomization(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	createKustomization(t, ns, "apps", "freeze")
	b := browser(t)
	signIn(b, t, url)
	closeFromPage(t, b, url, ns, "freeze", "release 1.4 sign-off")
	within(b, t, chromedp.WaitVisible(css(`.done`)), chromedp.WaitVisible(css(`.gate [data-state]`)))
	waitKustomizationHeld(t, ns, "apps", time.Minute)
	// The page follows the gate-controller's status live: closed, holding the Kustomization.
	within(b, t, chromedp.WaitVisible(chromedp.Search(`//li[contains(., "Kustomization `+ns+`/apps")]`)))
	state := read(b, t, chromedp.Text(css(`.gate [data-state]`)))
	assert.Equal(t, "closed", state)
	screenshot(b, t, "gate")
}

// TestActionsRunAsThePersonTheProxyNames: in a cluster, behind an authenticating proxy, the UI
// impersonates the user it names; the browser reaches the UI through a sidecar proxy on its Unix
// socket, as docs/ui.md lays it out. Without RBAC they get the API server's 403 and nothing
// changes; with it the gate closes and the Event names them. Anonymous requests cannot act.
func TestActionsRunAsThePersonTheProxyNames(t *testing.T) {
	socket := proxySocketPath(t)
	startUI(t, env.Config, setup.Config{Identity: setup.IdentityProxy, UserHeader: "X-Forwarded-User",
		GroupsHeader: "X-Forwarded-Groups", ProxySocket: socket, Anonymous: setup.AnonymousRead})
	url := sidecarProxy(t, socket)
	gateController(t)
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	ctx := context.Background()
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
		return err == nil && g.Status.ObservedGeneration == g.Generation && g.Status.Open, err
	}, "the gate-controller finds the gate open")
	// Everyone may read the namespace's gates, signed in or not: the UI shows them what they may read.
	readers(t, ns, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:authenticated"})
	readers(t, ns, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:unauthenticated"})

	anonymous := browser(t)
	within(anonymous, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`.gate`)))
	buttons := read(anonymous, t, chromedp.Evaluate[int](`document.querySelectorAll('a.button').length`))
	assert.Zero(t, buttons, "an anonymous visitor sees no actions")

	// bob may read the gate but not change it: no action is offered, the form is refused before
	// it is filled in, and a POST made without the page gets the same 403.
	bob := browser(t)
	proxyHeaders(t, bob, network.Headers{"X-Forwarded-User": "bob"})
	within(bob, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)), chromedp.WaitVisible(css(`.gate`)))
	offered := read(bob, t, chromedp.Evaluate[int](`document.querySelectorAll('a[href^="/act/"]').length`))
	assert.Zero(t, offered, "bob sees no action he may not take")
	within(bob, t, chromedp.Navigate(url+"/act/close-gate/"+ns+"/freeze"), chromedp.WaitVisible(css(`#error`)))
	refused := read(bob, t, chromedp.Text(css(`#error`)))
	assert.Contains(t, refused, `gates.gating.sluice.dev "freeze" is forbidden: User "bob" cannot update resource "gates"`, "in the API server's own words")
	assert.Zero(t, read(bob, t, chromedp.Evaluate[int](`document.querySelectorAll('#f-message').length`)), "no form to fill in")
	screenshot(bob, t, "forbidden")
	status, body := closeGateAs(t, socketClient(socket), "http://sluice-ui", ns, "bob", "bob posts anyway")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, `User &#34;bob&#34; cannot update resource &#34;gates&#34;`)
	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, g.Spec.Closed, "nothing changed")

	_, err = env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gate-keepers"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"gating.sluice.dev"}, Resources: []string{"gates"}, Verbs: []string{"get", "update"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gate-keepers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gate-keepers"},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "release-managers"}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	waitAllowed(t, "alice", []string{"release-managers", "devs"},
		authorizationv1.ResourceAttributes{Verb: "update", Group: "gating.sluice.dev", Resource: "gates", Namespace: ns, Name: "freeze"})
	alice := browser(t)
	proxyHeaders(t, alice, network.Headers{"X-Forwarded-User": "alice", "X-Forwarded-Groups": "release-managers,devs"})
	closeFromPage(t, alice, url, ns, "freeze", "alice freezes")
	within(alice, t, chromedp.WaitVisible(css(`.done`)))
	g, err = env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, g.Spec.Closed)
	assert.Equal(t, "alice freezes", g.Spec.Message)
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

// proxyHeaders makes the browser send what an authenticating proxy in front of the UI adds.
func proxyHeaders(t *testing.T, b context.Context, h network.Headers) {
	t.Helper()
	_, err := chromedp.Call(b, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	_, err = chromedp.Call(b, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
	require.NoError(t, err)
}
