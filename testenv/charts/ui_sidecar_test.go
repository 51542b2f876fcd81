package charts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluicehq/sluice/testenv"
)

// The UI's chart in proxy mode with an oauth2-proxy sidecar: the pod runs the UI and the proxy,
// which share the socket's emptyDir; the UI listens on loopback and on the socket only and
// verifies the ID token the proxy passes on; the Service targets the proxy, and the
// NetworkPolicy admits the proxy's port and never the pages'. The API server accepts it all.
// Without the proxy's Secrets or callback, the chart refuses to render.
func TestUIChartRendersTheOAuth2ProxySidecar(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	dir, err := UI()
	require.NoError(t, err)
	sidecar := []string{"identity.mode=proxy", "identity.proxy.sidecar.enabled=true",
		"identity.proxy.sidecar.redirectURL=https://sluice.example.com/oauth2/callback",
		"identity.proxy.sidecar.clientSecret.name=oauth2-proxy", "identity.proxy.sidecar.cookieSecret.name=oauth2-proxy",
		"identity.oidc.issuerURL=https://dex.example.com", "identity.oidc.clientID=oauth2-proxy", "identity.impersonate.groups[0]=team-a"}

	renderer := renderer(t)
	assertRefused(t, renderer, dir, "redirectURL", append(sidecar, "identity.proxy.sidecar.redirectURL=")...)
	assertRefused(t, renderer, dir, "trustedProxies", append(sidecar, "identity.proxy.sidecar.enabled=false")...)
	out, err := renderer.Template(ctx, "sluice-ui", "sluice-system", dir, []string{"--skip-schema-validation"},
		append(sidecar, "identity.proxy.sidecar.cookieSecret.name=")...)
	if assert.Error(t, err, "the sidecar without its cookie secret") {
		assert.Contains(t, out, "identity.proxy.sidecar.enabled needs identity.proxy.sidecar.clientSecret.name and .cookieSecret.name")
	}

	env := startEmpty(t)
	helm := newHelm(t, env)
	require.NoError(t, helm.Lint(ctx, dir, sidecar...))
	require.NoError(t, helm.Install(ctx, "sluice-ui", "sluice-system", dir, sidecar...))
	t.Cleanup(func() { _ = helm.Uninstall(context.Background(), "sluice-ui", "sluice-system") })

	d, err := env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-ui", metav1.GetOptions{})
	require.NoError(t, err)
	assertSecurePod(t, d)
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 2, "the UI and its proxy")
	assertSidecarContainers(t, pod)

	svc, err := env.Kube.CoreV1().Services("sluice-system").Get(ctx, "sluice-ui", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromString("proxy"), svc.Spec.Ports[0].TargetPort, "everyone comes through the proxy")

	np, err := env.Kube.NetworkingV1().NetworkPolicies("sluice-system").Get(ctx, "sluice-ui-proxy", metav1.GetOptions{})
	require.NoError(t, err)
	var admitted []string
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			admitted = append(admitted, p.Port.String())
		}
	}
	assert.ElementsMatch(t, []string{"proxy", "metrics", "probes"}, admitted, "the pages' port is never admitted")

	// The README's block, pasted whole, installs the same.
	require.NoError(t, helm.Uninstall(ctx, "sluice-ui", "sluice-system"))
	shell(t, env, readmeBlock(t, "ui", "### oauth2-proxy as a sidecar, in one paste"))
	d, err = env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-ui", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, d.Spec.Template.Spec.Containers, 2)
	got, _ := Flag(d.Spec.Template.Spec.Containers[1].Args, "redirect-url")
	assert.Equal(t, "https://sluice.example.com/oauth2/callback", got)
}

// assertSidecarContainers checks that the UI listens only on loopback and its socket, trusting
// no address, and that the proxy reaches it through the socket both mount.
func assertSidecarContainers(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	ui, proxy := pod.Containers[0], pod.Containers[1]
	assert.Equal(t, "oauth2-proxy", proxy.Name)
	for flag, want := range map[string]string{"identity": "proxy", "listen": "127.0.0.1:8092", "proxy-socket": "/run/sluice-ui/ui.sock",
		"oidc-issuer-url": "https://dex.example.com", "oidc-client-id": "oauth2-proxy"} {
		got, _ := Flag(ui.Args, flag)
		assert.Equal(t, want, got, "the UI's --%s", flag)
	}
	_, trusted := Flag(ui.Args, "trusted-proxies")
	assert.False(t, trusted, "no address is trusted: only the socket reaches the pages")
	for flag, want := range map[string]string{"upstream": "unix:///run/sluice-ui/ui.sock", "pass-authorization-header": "true",
		"oidc-issuer-url": "https://dex.example.com", "client-id": "oauth2-proxy", "redirect-url": "https://sluice.example.com/oauth2/callback",
		"client-secret-file": "/etc/oauth2-proxy/client-secret/client-secret", "cookie-secret-file": "/etc/oauth2-proxy/cookie-secret/cookie-secret"} {
		got, _ := Flag(proxy.Args, flag)
		assert.Equal(t, want, got, "the proxy's --%s", flag)
	}
	socketIn := func(c corev1.Container) bool {
		for _, m := range c.VolumeMounts {
			if m.Name == "proxy-socket" && m.MountPath == "/run/sluice-ui" {
				return true
			}
		}
		return false
	}
	assert.True(t, socketIn(ui), "the UI mounts the socket's folder")
	assert.True(t, socketIn(proxy), "so does the proxy")
	for _, v := range pod.Volumes {
		if v.Name == "proxy-socket" {
			assert.NotNil(t, v.EmptyDir, "an emptyDir only the pod's containers reach")
		}
	}
}
