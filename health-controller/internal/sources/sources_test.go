package sources

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
	return &unstructured.Unstructured{Object: m}
}

func TestKustomizationInventory(t *testing.T) {
	ks := object(t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
status:
  inventory:
    entries:
    - {id: apps_web_apps_Deployment, v: v1}
    - {id: apps_web__Service, v: v1}
    - {id: _apps__Namespace, v: v1}
    - {id: apps_web-tls_cert-manager.io_Certificate, v: v1}
`)
	refs, err := KustomizationInventory(ks)
	require.NoError(t, err)
	assert.Equal(t, []ObjectRef{
		{Namespace: "apps", Name: "web", Group: "apps", Kind: "Deployment", Version: "v1"},
		{Namespace: "apps", Name: "web", Group: "", Kind: "Service", Version: "v1"},
		{Namespace: "", Name: "apps", Group: "", Kind: "Namespace", Version: "v1"},
		{Namespace: "apps", Name: "web-tls", Group: "cert-manager.io", Kind: "Certificate", Version: "v1"},
	}, refs)

	empty, err := KustomizationInventory(object(t, `{kind: Kustomization, metadata: {name: new}}`))
	require.NoError(t, err)
	assert.Empty(t, empty, "no inventory yet is an empty set, not an error")

	for _, bad := range []string{`{id: apps_web_Deployment, v: v1}`, `{id: apps_web_apps_Deployment}`, `{id: apps__apps_Deployment, v: v1}`, `nope`,
		`{id: apps_web_apps_, v: v1}`, `{id: apps_we_b_apps_Deployment, v: v1}`, `{id: _web_apps_Deployment_, v: v1}`} {
		_, err := KustomizationInventory(object(t, `{metadata: {name: apps, namespace: flux-system}, status: {inventory: {entries: [`+bad+`]}}}`))
		assert.ErrorContains(t, err, "flux-system/apps", bad)
	}
}

// Flux writes the ":" of RBAC names as "__" in inventory ids; these are the ids it writes for
// metrics-server's manifests.
func TestKustomizationInventoryReadsRBACNames(t *testing.T) {
	ks := object(t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: metrics-server, namespace: flux-system}
status:
  inventory:
    entries:
    - {id: _system__aggregated-metrics-reader_rbac.authorization.k8s.io_ClusterRole, v: v1}
    - {id: _system__metrics-server_rbac.authorization.k8s.io_ClusterRole, v: v1}
    - {id: _metrics-server__system__auth-delegator_rbac.authorization.k8s.io_ClusterRoleBinding, v: v1}
    - {id: kube-system_metrics-server-auth-reader_rbac.authorization.k8s.io_RoleBinding, v: v1}
    - {id: kube-system_metrics-server_apps_Deployment, v: v1}
    - {id: _v1beta1.metrics.k8s.io_apiregistration.k8s.io_APIService, v: v1}
`)
	refs, err := KustomizationInventory(ks)
	require.NoError(t, err)
	assert.Equal(t, []ObjectRef{
		{Name: "system:aggregated-metrics-reader", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Version: "v1"},
		{Name: "system:metrics-server", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Version: "v1"},
		{Name: "metrics-server:system:auth-delegator", Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Version: "v1"},
		{Namespace: "kube-system", Name: "metrics-server-auth-reader", Group: "rbac.authorization.k8s.io", Kind: "RoleBinding", Version: "v1"},
		{Namespace: "kube-system", Name: "metrics-server", Group: "apps", Kind: "Deployment", Version: "v1"},
		{Name: "v1beta1.metrics.k8s.io", Group: "apiregistration.k8s.io", Kind: "APIService", Version: "v1"},
	}, refs)
}

// One unreadable entry does not hide the others: they are still returned, with the problem.
func TestKustomizationInventoryKeepsTheReadableEntries(t *testing.T) {
	ks := object(t, `{metadata: {name: apps, namespace: flux-system}, status: {inventory: {entries: [
		{id: apps_web_apps_Deployment, v: v1}, {id: broken, v: v1}]}}}`)
	refs, err := KustomizationInventory(ks)
	var inv *InventoryError
	require.ErrorAs(t, err, &inv)
	assert.Len(t, inv.Problems, 1)
	assert.Equal(t, []ObjectRef{{Namespace: "apps", Name: "web", Group: "apps", Kind: "Deployment", Version: "v1"}}, refs)
}

func TestApplicationResources(t *testing.T) {
	app := object(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
status:
  resources:
  - {group: apps, version: v1, kind: Deployment, namespace: guestbook, name: ui, status: Synced, health: {status: Healthy}}
  - {version: v1, kind: Namespace, name: guestbook}
`)
	refs, err := ApplicationResources(app)
	require.NoError(t, err)
	assert.Equal(t, []ObjectRef{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui"},
		{Version: "v1", Kind: "Namespace", Name: "guestbook"},
	}, refs)

	_, err = ApplicationResources(object(t, `{metadata: {name: g, namespace: argocd}, status: {resources: [{kind: Deployment, name: ui}]}}`))
	assert.ErrorContains(t, err, "argocd/g")
}

func TestParseCommit(t *testing.T) {
	sha256 := strings.Repeat("ab", 32)
	ok := map[string]string{
		"main@sha1:" + sha:             sha,
		"refs/tags/v1.2.0@sha1:" + sha: sha,
		"feature/x@sha1:" + sha:        sha,
		"sha1:" + sha:                  sha,
		"main@sha256:" + sha256:        sha256,
		"main/" + sha:                  sha,
		sha:                            sha,
		strings.ToUpper(sha):           sha,
	}
	for in, want := range ok {
		got, err := ParseCommit(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "main", "main@sha1:abc123", "latest@md5:" + sha, "v1.0.0", sha[:39]} {
		_, err := ParseCommit(bad)
		assert.Error(t, err, bad)
	}
}

func TestKustomizationRevision(t *testing.T) {
	rev, commit, err := KustomizationRevision(object(t, `{metadata: {name: apps, namespace: flux-system},
		spec: {sourceRef: {kind: GitRepository, name: repo}}, status: {lastAppliedRevision: "main@sha1:`+sha+`"}}`))
	require.NoError(t, err)
	assert.Equal(t, "main@sha1:"+sha, rev)
	assert.Equal(t, sha, commit)

	_, _, err = KustomizationRevision(object(t, `{metadata: {name: apps, namespace: flux-system}, status: {}}`))
	assert.ErrorContains(t, err, "has not applied a revision yet")

	rev, _, err = KustomizationRevision(object(t, `{metadata: {name: apps, namespace: flux-system},
		spec: {sourceRef: {kind: OCIRepository, name: repo}}, status: {lastAppliedRevision: "latest@sha256:`+strings.Repeat("a", 64)+`"}}`))
	assert.ErrorContains(t, err, "not a git commit")
	assert.NotEmpty(t, rev, "the revision is still reported")
}

func TestApplicationRevision(t *testing.T) {
	_, commit, err := ApplicationRevision(object(t, `{metadata: {name: g, namespace: argocd}, status: {sync: {status: Synced, revision: `+sha+`}}}`))
	require.NoError(t, err)
	assert.Equal(t, sha, commit)

	_, commit, err = ApplicationRevision(object(t, `{metadata: {name: g, namespace: argocd}, status: {sync: {revisions: [`+sha+`, "1.2.3"]}}}`))
	require.NoError(t, err)
	assert.Equal(t, sha, commit, "a multi-source Application uses its first source")

	_, _, err = ApplicationRevision(object(t, `{metadata: {name: g, namespace: argocd}, status: {sync: {revision: "1.2.3"}}}`))
	assert.ErrorContains(t, err, "full commit id", "a Helm chart version is not a commit")
}

func TestRevisionOfTheWrongTypeIsNamed(t *testing.T) {
	_, _, err := ApplicationRevision(object(t, `{metadata: {name: g, namespace: argocd}, status: {sync: {revision: 1111111111111111111111111111111111111111}}}`))
	assert.ErrorContains(t, err, "status.sync.revision")
	_, _, err = KustomizationRevision(object(t, `{metadata: {name: apps, namespace: flux-system}, status: {lastAppliedRevision: [main]}}`))
	assert.ErrorContains(t, err, "status.lastAppliedRevision")
}
