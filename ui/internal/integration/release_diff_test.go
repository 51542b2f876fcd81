package integration

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestTheReleaseDiffReadsTheSnapshotSecretsAsThePerson: two snapshots of a ManifestRelease, saved
// as the rollback-controller saves them (numbered zstd Secrets owned by the release, their digests
// in its status chain). From the rollbacks page, alice, who may get those Secrets, sees the
// per-object diff a rollback to the first would make; bob, who may not, gets the refusal.
func TestTheReleaseDiffReadsTheSnapshotSecretsAsThePerson(t *testing.T) {
	socket := proxySocketPath(t)
	startUI(t, env.Config, setup.Config{Identity: setup.IdentityProxy, UserHeader: "X-Forwarded-User",
		GroupsHeader: "X-Forwarded-Groups", ProxySocket: socket})
	url := sidecarProxy(t, socket)
	ns := newNamespace(t)
	ctx := context.Background()

	releases := env.Sluice.RollbackV1alpha1().ManifestReleases(ns)
	mr, err := releases.Create(ctx, &rollbackv1alpha1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payments"},
		Spec: rollbackv1alpha1.ManifestReleaseSpec{Source: rollbackv1alpha1.ManifestSource{
			ConfigMaps: []rollbackv1alpha1.ConfigMapReference{{Name: "payments-manifests"}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	store := &snapshot.Store{Client: env.Kube.CoreV1(), FieldManager: "test"}
	controller := true
	owner := &metav1.OwnerReference{APIVersion: "rollback.sluice.dev/v1alpha1", Kind: "ManifestRelease", Name: mr.Name, UID: mr.UID, Controller: &controller}
	deployment := func(image string) []snapshot.File {
		return []snapshot.File{{Name: "deploy.yaml", Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: payments, namespace: " + ns +
			"}\nspec: {replicas: 3, template: {spec: {containers: [{name: api, image: \"" + image + "\"}]}}}\n")}}
	}
	first, err := store.Save(ctx, snapshot.Meta{Namespace: ns, Release: mr.Name, Number: 1, Owner: owner}, deployment("payments:1.0"))
	require.NoError(t, err)
	second, err := store.Save(ctx, snapshot.Meta{Namespace: ns, Release: mr.Name, Number: 2, Owner: owner}, deployment("payments:1.1"))
	require.NoError(t, err)
	now := metav1.Now()
	mr.Status.UpgradeNumber, mr.Status.DeployedVersion, mr.Status.DeployedDigest = 2, "v2", second.Digest
	mr.Status.Snapshots = []rollbackv1alpha1.SnapshotLink{{Number: 1, Digest: first.Digest}, {Number: 2, Digest: second.Digest, Previous: first.Digest}}
	mr.Status.History = []rollbackv1alpha1.ReleaseHistoryEntry{
		{Number: 2, Action: rollbackv1alpha1.ActionUpgrade, Version: "v2", Digest: second.Digest, Time: now},
		{Number: 1, Action: rollbackv1alpha1.ActionUpgrade, Version: "v1", Digest: first.Digest, Time: now},
	}
	_, err = releases.UpdateStatus(ctx, mr, metav1.UpdateOptions{})
	require.NoError(t, err)
	secretReaders(t, ns, "release-managers", snapshot.HeadName(mr.Name, 1), snapshot.HeadName(mr.Name, 2))
	pipelineReaders(t, ns, "release-managers", "devs")

	alice := browser(t)
	proxyHeaders(t, alice, network.Headers{"X-Forwarded-User": "alice", "X-Forwarded-Groups": "release-managers"})
	// Followed by its address: the live page may swap the link out between finding and clicking it.
	within(alice, t, chromedp.Navigate(url+"/rollbacks?q="+ns), chromedp.WaitVisible(css(`#release-`+ns+`-payments a.diff`)))
	diff := read(alice, t, chromedp.Evaluate[string](`document.querySelector('#release-`+ns+`-payments a.diff').href`))
	within(alice, t, chromedp.Navigate(diff), chromedp.WaitVisible(css(`section.file`)))
	files := read(alice, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.file')].map(s => s.dataset.file)`))
	assert.Equal(t, []string{"Deployment.apps/" + ns + "/payments"}, files)
	added := read(alice, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.file .line.add')].map(l => l.textContent.trim())`))
	removed := read(alice, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.file .line.del')].map(l => l.textContent.trim())`))
	assert.Equal(t, []string{"+      - image: payments:1.0"}, added, "rolling back to snapshot 1 brings its image back")
	assert.Equal(t, []string{"-      - image: payments:1.1"}, removed)

	bob := browser(t)
	proxyHeaders(t, bob, network.Headers{"X-Forwarded-User": "bob", "X-Forwarded-Groups": "devs"})
	within(bob, t, chromedp.Navigate(url+"/rollbacks/"+ns+"/payments/diff?from=2&to=1"), chromedp.WaitVisible(css(`#diff-error`)))
	refused := read(bob, t, chromedp.Text(css(`#diff-error`)))
	assert.Contains(t, refused, "You may not read the Secrets of snapshot 2 of ManifestRelease "+ns+"/payments")
	assert.Contains(t, refused, `User "bob" cannot get resource "secrets"`)
	assert.Zero(t, read(bob, t, chromedp.Evaluate[int](`document.querySelectorAll('section.file').length`)), "no diff")
}
