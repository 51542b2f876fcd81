package charts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/testenv"
)

// The UI's chart in OIDC mode: it refuses to render without the groups a person may be
// impersonated into, in proxy mode too; installed, its ServiceAccount may impersonate those
// groups only, never system:masters nor another admin group, as SubjectAccessReviews of the
// chart's own ServiceAccount prove; the client secret and cookie key come from Secrets as files.
func TestUIChartOIDCModeImpersonatesOnlyTheListedGroups(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	dir, err := UI()
	require.NoError(t, err)
	oidc := []string{"identity.mode=oidc", "identity.oidc.issuerURL=https://idp.example.com", "identity.oidc.clientID=sluice-ui",
		"identity.oidc.redirectURL=https://sluice.example.com/oidc/callback", "identity.oidc.clientSecret.name=sluice-ui-oidc",
		"identity.oidc.cookieKey.name=sluice-ui-oidc"}
	withGroups := append([]string{"identity.impersonate.groups[0]=team-a", "identity.impersonate.groups[1]=release-managers"}, oidc...)

	renderer := renderer(t)
	assertRefused(t, renderer, dir, "groups", oidc...)
	for mode, set := range map[string][]string{
		"oidc":  oidc,
		"proxy": {"identity.mode=proxy", "identity.proxy.trustedProxies[0]=10.244.0.7/32", "identity.oidc.issuerURL=https://dex.example.com", "identity.oidc.clientID=oauth2-proxy"},
	} {
		out, err := renderer.Template(ctx, "sluice-ui", "sluice-system", dir, []string{"--skip-schema-validation"}, set...)
		if assert.Error(t, err, "%s mode without groups renders nothing", mode) {
			assert.Contains(t, out, "identity.mode "+mode+" needs identity.impersonate.groups", "the template refuses too, when the schema is skipped")
		}
	}
	proxy := []string{"identity.mode=proxy", "identity.proxy.trustedProxies[0]=10.244.0.7/32", "identity.impersonate.groups[0]=team-a",
		"identity.oidc.issuerURL=https://dex.example.com", "identity.oidc.clientID=oauth2-proxy"}
	out, err := renderer.Template(ctx, "sluice-ui", "sluice-system", dir, nil, proxy...)
	require.NoError(t, err)
	assert.Contains(t, out, "kind: NetworkPolicy\nmetadata:\n  name: sluice-ui-proxy", "proxy mode admits only the proxy")
	assert.Contains(t, out, "- ipBlock:\n            cidr: \"10.244.0.7/32\"\n      ports: [{port: http, protocol: TCP}]")
	_, err = renderer.Template(ctx, "sluice-ui", "sluice-system", dir, nil, append(proxy, "networkPolicy.enabled=true")...)
	assert.ErrorContains(t, err, "would undo identity.proxy.networkPolicy", "the shared policy would admit everyone to the pages")
	assertRefused(t, renderer, dir, "issuerURL", append(withGroups, "identity.oidc.issuerURL=http://idp.example.com")...)

	env := startEmpty(t)
	helm := newHelm(t, env)
	require.NoError(t, helm.Lint(ctx, dir, withGroups...))
	require.NoError(t, helm.Install(ctx, "sluice-ui", "sluice-system", dir, withGroups...))
	t.Cleanup(func() { _ = helm.Uninstall(context.Background(), "sluice-ui", "sluice-system") })
	client, err := kubernetes.NewForConfig(env.Impersonate("sluice-system", "sluice-ui"))
	require.NoError(t, err)
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "groups", Name: "team-a"},
		{Verb: "impersonate", Resource: "groups", Name: "release-managers"},
		{Verb: "impersonate", Resource: "users", Name: "alice@example.com"},
	} {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.True(t, ok, "sluice-ui may %s", describe(a))
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "groups", Name: "system:masters"},
		{Verb: "impersonate", Resource: "groups", Name: "kubeadm:cluster-admins"},
		{Verb: "impersonate", Resource: "groups", Name: "cluster-admins"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "kube-system", Name: "default"},
		{Verb: "list", Resource: "secrets"},
	} {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.False(t, ok, "sluice-ui must not %s", describe(a))
	}
	args := uiArgs(t, env, "sluice-ui")
	for flag, want := range map[string]string{"identity": "oidc", "oidc-issuer-url": "https://idp.example.com",
		"oidc-client-secret-file": "/etc/sluice-ui/oidc/client-secret/client-secret", "oidc-cookie-key-file": "/etc/sluice-ui/oidc/cookie-key/cookie-key"} {
		got, _ := Flag(args, flag)
		assert.Equal(t, want, got, "--%s", flag)
	}
}

// The UI README's OIDC-mode and oauth2-proxy blocks work pasted whole, and install what they
// say: the UI signing people in itself, with its secrets as files; and the UI believing only the
// proxy's verified ID token, behind a NetworkPolicy.
func TestUIReadmeOIDCAndProxyBlocks(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	env := startEmpty(t)
	helm := newHelm(t, env)
	shell(t, env, readmeBlock(t, "ui", "### OIDC mode, in one paste"))
	args := uiArgs(t, env, "sluice-ui")
	for flag, want := range map[string]string{"identity": "oidc", "oidc-issuer-url": "https://dex.example.com", "oidc-username-claim": "email",
		"oidc-redirect-url": "https://sluice.example.com/oidc/callback", "oidc-client-secret-file": "/etc/sluice-ui/oidc/client-secret/client-secret"} {
		got, _ := Flag(args, flag)
		assert.Equal(t, want, got, "--%s", flag)
	}
	// The private CA's block, after it: the issuer's CA mounted where the UI reads its roots.
	shell(t, env, readmeBlock(t, "ui", "#### An issuer signed by a private CA, in one paste"))
	d, err := env.Kube.AppsV1().Deployments("sluice-system").Get(ctx, "sluice-ui", metav1.GetOptions{})
	require.NoError(t, err)
	pod := d.Spec.Template.Spec
	assert.Contains(t, pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "issuer-ca", MountPath: "/etc/ssl/certs", ReadOnly: true})
	var fromConfigMap string
	for _, v := range pod.Volumes {
		if v.Name == "issuer-ca" && v.ConfigMap != nil {
			fromConfigMap = v.ConfigMap.Name
		}
	}
	assert.Equal(t, "sluice-ui-issuer-ca", fromConfigMap, "the issuer-ca volume is the ConfigMap of the CA")
	got, _ := Flag(pod.Containers[0].Args, "identity")
	assert.Equal(t, "oidc", got, "--reuse-values keeps OIDC mode")
	require.NoError(t, helm.Uninstall(ctx, "sluice-ui", "sluice-system"))

	shell(t, env, readmeBlock(t, "ui", "### Behind oauth2-proxy, in one paste"))
	args = uiArgs(t, env, "sluice-ui")
	for flag, want := range map[string]string{"identity": "proxy", "oidc-issuer-url": "https://dex.example.com", "oidc-client-id": "oauth2-proxy"} {
		got, _ := Flag(args, flag)
		assert.Equal(t, want, got, "--%s", flag)
	}
}
