package manifestrelease_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
	"github.com/sluicehq/sluice/testenv"
)

// Deleting a release follows spec.prune, as deleting a Flux Kustomization does: with prune (the
// default) its objects are deleted as its tenant ServiceAccount; with prune false they are left.
// An Event says which. A release whose objects its ServiceAccount may not delete stays, Stalled
// with a condition that names the right and how to let the release go, until a person acts:
// here by setting prune to false, which leaves the objects. The controller runs under the
// chart's ServiceAccount, which may delete no object of a release itself.
func TestDeletingAReleaseFollowsPrune(t *testing.T) {
	f := newFixture(t)
	cfg := installChart(t, f.ns)
	f.tenant("tenant")
	no := false
	for _, name := range []string{"pruned", "kept", "stuck"} {
		f.configMap(name+"-src", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-config\n"})
	}
	f.start(nil, cfg)
	f.createRelease("pruned", rollbackv1.ManifestReleaseSpec{Source: configMapSource("pruned-src"), ServiceAccountName: "tenant"})
	f.createRelease("kept", rollbackv1.ManifestReleaseSpec{Source: configMapSource("kept-src"), ServiceAccountName: "tenant", Prune: &no})
	f.createRelease("stuck", rollbackv1.ManifestReleaseSpec{Source: configMapSource("stuck-src"), ServiceAccountName: "tenant"})
	for _, name := range []string{"pruned", "kept", "stuck"} {
		mr := f.waitRelease(name, name+" deployed", deployed(1))
		assert.Contains(t, mr.Finalizers, rollbackv1.ManifestReleaseFinalizer)
	}

	f.deleteRelease("pruned")
	f.waitReleaseGone("pruned")
	assert.Empty(t, f.liveObjects("pruned"), "prune deletes the release's objects")
	f.waitEvent("pruned", manifestrelease.ReasonObjectsDeleted+": the release is deleted; its 1 objects were deleted as ServiceAccount "+f.ns+"/tenant")

	f.deleteRelease("kept")
	f.waitReleaseGone("kept")
	assert.Equal(t, []string{"ConfigMap/kept-config"}, f.liveObjects("kept"), "prune false leaves them")
	f.waitEvent("kept", manifestrelease.ReasonObjectsLeft+": the release is deleted with spec.prune false; its 1 objects are left in place")

	// The tenant loses the right to delete ConfigMaps: the release stays, and says why.
	_, err := testenv.Update(f.ctx, env.Kube.RbacV1().Roles(f.ns), "tenant", func(role *rbacv1.Role) {
		role.Rules[0].Verbs = slices.DeleteFunc(role.Rules[0].Verbs, func(v string) bool { return v == "delete" })
	})
	require.NoError(t, err)
	f.deleteRelease("stuck")
	mr := f.waitRelease("stuck", "stalled on the forbidden delete", forbidden)
	message := condition(mr, conditions.Stalled).Message
	assert.Contains(t, message, "ServiceAccount "+f.ns+"/tenant may not delete ConfigMap/"+f.ns+"/stuck-config")
	assert.Contains(t, message, `kubectl -n `+f.ns+` patch manifestrelease stuck --type=merge -p '{"spec":{"prune":false}}'`)
	assert.NotNil(t, mr.DeletionTimestamp)
	assert.Equal(t, []string{"ConfigMap/stuck-config"}, f.liveObjects("stuck"))

	f.updateRelease("stuck", func(mr *rollbackv1.ManifestRelease) { mr.Spec.Prune = &no })
	f.waitReleaseGone("stuck")
	assert.Equal(t, []string{"ConfigMap/stuck-config"}, f.liveObjects("stuck"), "left in place, as asked")
}

func (f *fixture) deleteRelease(name string) {
	f.t.Helper()
	require.NoError(f.t, env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).Delete(f.ctx, name, metav1.DeleteOptions{}))
}

func (f *fixture) waitReleaseGone(name string) {
	f.t.Helper()
	f.waitFor(name+" gone", func() bool {
		_, err := env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// waitEvent waits for an Event about the release that starts with prefix ("Reason: message"):
// Events are sent after the change they announce.
func (f *fixture) waitEvent(release, prefix string) {
	f.t.Helper()
	f.waitFor("an Event "+prefix, func() bool {
		return slices.ContainsFunc(f.events(release), func(e string) bool { return strings.HasPrefix(e, prefix) })
	})
}
