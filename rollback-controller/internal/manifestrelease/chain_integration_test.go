package manifestrelease_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
)

// The status records the digest chain of the snapshots a release wrote. Someone allowed to write
// Secrets in the namespace replaces snapshot 1 with one of their own, with the right labels and
// the release's UID as its owner: a rollback to 1 is refused, the Secret is neither loaded nor
// deleted, and a condition says so. The controller runs under the chart's ServiceAccount and the
// release as its tenant.
func TestAPlantedSnapshotIsNeverLoaded(t *testing.T) {
	f := newFixture(t)
	cfg := installChart(t, f.ns)
	f.tenant("tenant")
	f.configMap("src", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  v: \"1\"\n"})
	f.start(nil, cfg)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), ServiceAccountName: "tenant", Version: "v1"})
	first := f.waitRelease("web", "v1 deployed", deployed(1))
	f.configMap("src", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  v: \"2\"\n"})
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "v2 deployed", deployed(2))
	require.Len(t, mr.Status.Snapshots, 2)
	assert.Equal(t, rollbackv1.SnapshotLink{Number: 1, Digest: first.Status.DeployedDigest}, mr.Status.Snapshots[0])
	assert.Equal(t, rollbackv1.SnapshotLink{Number: 2, Digest: mr.Status.DeployedDigest, Previous: first.Status.DeployedDigest}, mr.Status.Snapshots[1])

	secrets := env.Kube.CoreV1().Secrets(f.ns)
	require.NoError(t, secrets.Delete(f.ctx, snapshot.HeadName("web", 1), metav1.DeleteOptions{}))
	planter := &snapshot.Store{Client: env.Kube.CoreV1()}
	planted, err := planter.Save(f.ctx, snapshot.Meta{Namespace: f.ns, Release: "web", Number: 1,
		Owner: &metav1.OwnerReference{APIVersion: rollbackv1.SchemeGroupVersion.String(), Kind: "ManifestRelease", Name: "web", UID: mr.UID}},
		[]snapshot.File{{Name: "src/planted.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: planted\n")}})
	require.NoError(t, err)

	f.annotate("web", rollbackv1.RollbackToAnnotation, "1")
	mr = f.waitRelease("web", "the rollback to 1 handled", func(mr *rollbackv1.ManifestRelease) bool { return mr.Status.LastHandledRollback == "1" })
	verified := condition(mr, rollbackv1.ConditionSnapshotsVerified)
	assert.Equal(t, metav1.ConditionFalse, verified.Status)
	assert.Equal(t, manifestrelease.ReasonSnapshotNotInChain, verified.Reason)
	assert.Contains(t, verified.Message, "Secret "+f.ns+"/web.1 holds digest "+planted.Digest+", and the release recorded "+first.Status.DeployedDigest+" for snapshot 1")
	assert.Equal(t, int64(2), mr.Status.UpgradeNumber, "nothing is rolled back")
	_, err = env.Kube.CoreV1().ConfigMaps(f.ns).Get(f.ctx, "planted", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the planted manifests are never applied: %v", err)
	_, err = secrets.Get(f.ctx, snapshot.HeadName("web", 1), metav1.GetOptions{})
	assert.NoError(t, err, "nor is the planted Secret deleted")
	f.waitEvent("web", manifestrelease.ReasonRollbackRefused+": cannot roll back to snapshot 1")
}
