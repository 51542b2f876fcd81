package charts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/testenv"
)

// The UI's chart in proxy mode: its ServiceAccount may impersonate people, only the groups it
// lists, never a ServiceAccount, and record Events; in the default mode it may do none of that.
// Proxy mode without the proxy's addresses or its issuer, and values the UI cannot run with, are refused.
func TestUIChartImpersonatesOnlyInProxyMode(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	dir, err := UI()
	require.NoError(t, err)
	env := startEmpty(t)
	helm := newHelm(t, env)
	proxy := []string{"identity.mode=proxy", "identity.proxy.trustedProxies[0]=10.244.0.7/32", "identity.impersonate.groups[0]=platform",
		"identity.proxy.allowedAdminGroups[0]=kubeadm:cluster-admins", "identity.anonymous=read",
		"identity.oidc.issuerURL=https://dex.example.com", "identity.oidc.clientID=oauth2-proxy"}
	require.NoError(t, helm.Lint(ctx, dir, proxy...))

	require.NoError(t, helm.Install(ctx, "sluice-ui", "sluice-system", dir))
	assertUIPrivilege(t, env, "sluice-system", "sluice-ui", false)
	_, anonymous := Flag(uiArgs(t, env, "sluice-ui"), "anonymous")
	assert.False(t, anonymous, "anonymous reading is off by default")

	require.NoError(t, helm.Upgrade(ctx, "sluice-ui", "sluice-system", dir, proxy...))
	assertUIPrivilege(t, env, "sluice-system", "sluice-ui", true)
	client, err := kubernetes.NewForConfig(env.Impersonate("sluice-system", "sluice-ui"))
	require.NoError(t, err)
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "groups", Name: "platform"},
		{Verb: "impersonate", Resource: "users", Name: "alice@example.com"},
	} {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.True(t, ok, "sluice-ui may %s", describe(a))
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "groups", Name: "system:masters"},
		{Verb: "impersonate", Resource: "groups", Name: "admins"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "sluice-system", Name: "sluice-ui"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras", Name: "scopes"},
		{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids"},
	} {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.False(t, ok, "sluice-ui must not %s", describe(a))
	}

	args := uiArgs(t, env, "sluice-ui")
	for flag, want := range map[string]string{"identity": "proxy", "trusted-proxies": "10.244.0.7/32", "listen": ":8092", "leader-elect": "false",
		"proxy-allowed-admin-groups": "kubeadm:cluster-admins", "anonymous": "read", "oidc-issuer-url": "https://dex.example.com"} {
		got, _ := Flag(args, flag)
		assert.Equal(t, want, got, "--%s", flag)
	}
	require.NoError(t, helm.Uninstall(ctx, "sluice-ui", "sluice-system"))

	renderer := renderer(t)
	// Proxy mode without the proxy's addresses: the schema refuses it, and so does the template
	// when the schema is skipped.
	assertRefused(t, renderer, dir, "trustedProxies", "identity.mode=proxy")
	out, err := renderer.Template(ctx, "sluice-ui", "sluice-system", dir, []string{"--skip-schema-validation"}, "identity.mode=proxy")
	if assert.Error(t, err, "proxy mode without the proxy's addresses") {
		assert.Contains(t, out, "identity.mode proxy needs identity.proxy.trustedProxies")
	}
	// An address alone is never believed: proxy mode without the issuer is refused too.
	out, err = renderer.Template(ctx, "sluice-ui", "sluice-system", dir, nil, "identity.mode=proxy",
		"identity.proxy.trustedProxies[0]=10.244.0.7/32", "identity.impersonate.groups[0]=platform")
	if assert.Error(t, err, "proxy mode without the issuer") {
		assert.Contains(t, out, "identity.mode proxy needs identity.oidc.issuerURL")
	}
	for set, field := range map[string]string{
		"identity.mode=kubeconfig":                      "mode",
		"identity.impersonate.groups[0]=system:masters": "groups",
		"identity.proxy.trustedProxies[0]=the proxy":    "trustedProxies",
		"service.type=ExternalName":                     "type",
		"http.port=0":                                   "port",
	} {
		assertRefused(t, renderer, dir, field, set)
	}
}

// uiArgs returns the args of the UI's container in the Deployment named name.
func uiArgs(t *testing.T, env *testenv.Env, name string) []string {
	t.Helper()
	d, err := env.Kube.AppsV1().Deployments("sluice-system").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return d.Spec.Template.Spec.Containers[0].Args
}

// assertPrivilege checks the ServiceAccount of a release of chart: a controller's rights, or the
// UI's (read-only, the chart's default identity mode).
func assertPrivilege(t *testing.T, env *testenv.Env, namespace, release, chart string) {
	t.Helper()
	if chart == "ui" {
		assertUIPrivilege(t, env, namespace, release, false)
		return
	}
	assertLeastPrivilege(t, env, namespace, release)
}

// assertUIPrivilege proves through impersonation that the UI's ServiceAccount sa reads every
// kind it shows and writes nothing: no Sluice object, no Lease, no Secret read; with proxy, it
// may also impersonate users and record Events, and without, neither.
func assertUIPrivilege(t *testing.T, env *testenv.Env, namespace, sa string, proxy bool) {
	t.Helper()
	client, err := kubernetes.NewForConfig(env.Impersonate(namespace, sa))
	require.NoError(t, err)
	ctx := context.Background()
	reads := []authorizationv1.ResourceAttributes{
		{Verb: "watch", Group: "promoter.sluice.dev", Resource: "promotionstrategies"},
		{Verb: "list", Group: "promoter.sluice.dev", Resource: "pullrequests"},
		{Verb: "list", Group: "commitstatus.sluice.dev", Resource: "commitstatuses"},
		{Verb: "watch", Group: "gating.sluice.dev", Resource: "gates"},
		{Verb: "list", Group: "health.sluice.dev", Resource: "healthchecks"},
		{Verb: "list", Group: "rollback.sluice.dev", Resource: "manifestreleases"},
		{Verb: "watch", Group: "rollback.sluice.dev", Resource: "revertcommits"},
		{Verb: "list", Group: "rollback.sluice.dev", Resource: "rollbackpolicies"},
		{Verb: "list", Group: "scm.sluice.dev", Resource: "scmrepositories"},
		{Verb: "list", Group: "scm.sluice.dev", Resource: "scmproviders"},
		{Verb: "watch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "watch", Resource: "events"},
	}
	denied := []authorizationv1.ResourceAttributes{
		{Namespace: "apps", Verb: "update", Group: "gating.sluice.dev", Resource: "gates"},
		{Namespace: "apps", Verb: "patch", Group: "promoter.sluice.dev", Resource: "promotionstrategies"},
		{Namespace: "apps", Verb: "update", Group: "promoter.sluice.dev", Resource: "pullrequests"},
		{Namespace: "apps", Verb: "create", Group: "rollback.sluice.dev", Resource: "revertcommits"},
		{Namespace: "apps", Verb: "patch", Group: "rollback.sluice.dev", Resource: "manifestreleases"},
		{Namespace: "apps", Verb: "patch", Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"},
		{Namespace: namespace, Verb: "create", Group: "coordination.k8s.io", Resource: "leases"},
		{Verb: "list", Resource: "secrets"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Verb: "impersonate", Resource: "serviceaccounts"},
	}
	proxyOnly := []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "users", Name: "bob"},
		{Namespace: "apps", Verb: "create", Resource: "events"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	}
	if proxy {
		reads = append(reads, proxyOnly...)
	} else {
		denied = append(denied, proxyOnly...)
	}
	for _, a := range reads {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.True(t, ok, "%s may %s", sa, describe(a))
	}
	for _, a := range denied {
		ok, err := Can(ctx, client, a)
		require.NoError(t, err)
		assert.False(t, ok, "%s must not %s", sa, describe(a))
	}
}

// assertSecurePod checks the defaults every chart's pod runs with: not root, no privilege
// escalation, no capability, a read-only root filesystem and the runtime's seccomp profile.
func assertSecurePod(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	require.NotNil(t, pod.SecurityContext, "%s: pod securityContext", d.Name)
	assert.Equal(t, true, deref(pod.SecurityContext.RunAsNonRoot), "%s: runAsNonRoot", d.Name)
	if assert.NotNil(t, pod.SecurityContext.SeccompProfile, "%s: seccompProfile", d.Name) {
		assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type, d.Name)
	}
	for _, c := range pod.Containers {
		sc := c.SecurityContext
		require.NotNil(t, sc, "%s/%s: securityContext", d.Name, c.Name)
		assert.Equal(t, false, deref(sc.AllowPrivilegeEscalation), "%s/%s: allowPrivilegeEscalation", d.Name, c.Name)
		assert.Equal(t, true, deref(sc.ReadOnlyRootFilesystem), "%s/%s: readOnlyRootFilesystem", d.Name, c.Name)
		assert.Equal(t, false, deref(sc.Privileged), "%s/%s: privileged", d.Name, c.Name)
		if assert.NotNil(t, sc.Capabilities, "%s/%s: capabilities", d.Name, c.Name) {
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "%s/%s: drops every capability", d.Name, c.Name)
		}
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
