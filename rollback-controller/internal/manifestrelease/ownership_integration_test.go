package manifestrelease_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
)

func configMapYAML(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  v: \"" + value + "\"\n"
}

// Under the chart's ServiceAccount, a tenant's release: a ConfigMap a person made is refused,
// naming it and its manager, with nothing applied; once its owner annotates it, the release takes
// it over, and a failed upgrade's rollback gives it back with its content from before. A second
// release naming the first one's object stops, and nothing is deleted. A snapshot Secret planted
// under the release's next name is not adopted: SnapshotNameTaken, and it stays.
func TestReleasesTakeOverOnlyWhatTheyAreGiven(t *testing.T) {
	f := newFixture(t)
	cfg := installChart(t, f.ns)
	f.tenant("tenant")
	_, err := env.Kube.CoreV1().ConfigMaps(f.ns).Create(f.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"v": "by hand"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	f.configMap("web-src", map[string]string{"web.yaml": configMapYAML("web-config", "1")})
	f.start(nil, cfg)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), ServiceAccountName: "tenant", Version: "v1"})
	f.waitRelease("web", "v1 deployed", deployed(1))

	// v2 names the person's ConfigMap: refused before anything is applied.
	f.configMap("web-src", map[string]string{"web.yaml": configMapYAML("web-config", "2"), "settings.yaml": configMapYAML("settings", "from v2")})
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "the takeover refused", stalledWith(manifestrelease.ReasonNotOwned))
	message := condition(mr, conditions.Stalled).Message
	assert.Contains(t, message, "ConfigMap/"+f.ns+"/settings exists and is not this release's")
	assert.Contains(t, message, "managed by")
	assert.Equal(t, "1", f.configMapValue("web-config"), "nothing of v2 is applied")
	assert.Equal(t, "by hand", f.configMapValue("settings"))
	assert.Equal(t, []int64{1}, f.snapshotNumbers("web"))

	// Its owner lets it go; v2 fails its health (a Deployment that never gets ready), so the
	// rollback gives the ConfigMap back as it was.
	f.annotateConfigMap("settings", rollbackv1.AdoptAnnotation, "true")
	f.setNotReady("broken", true)
	f.configMap("web-src", map[string]string{"web.yaml": configMapYAML("web-config", "2"), "settings.yaml": configMapYAML("settings", "from v2"),
		"broken.yaml": brokenDeployment})
	f.updateRelease("web", func(mr *rollbackv1.ManifestRelease) { mr.Spec.Version, mr.Spec.Timeout = "v2b", seconds(3) })
	f.waitRelease("web", "v2 rolled back", rolledBackFrom(2))
	assert.Equal(t, "by hand", f.configMapValue("settings"), "the adopted object has its content from before")
	cm, err := env.Kube.CoreV1().ConfigMaps(f.ns).Get(f.ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Labels, rollbackv1.ReleaseNameLabel, "and is no longer the release's")
	assert.Equal(t, "1", f.configMapValue("web-config"))

	// A second release naming web's ConfigMap stops; nothing is deleted.
	f.configMap("other-src", map[string]string{"web.yaml": configMapYAML("web-config", "other")})
	f.createRelease("other", rollbackv1.ManifestReleaseSpec{Source: configMapSource("other-src"), ServiceAccountName: "tenant"})
	mr = f.waitRelease("other", "the second release stops", stalledWith(manifestrelease.ReasonNotOwned))
	assert.Contains(t, condition(mr, conditions.Stalled).Message, "held by ManifestRelease "+f.ns+"/web")
	assert.Equal(t, "1", f.configMapValue("web-config"))
	assert.True(t, conditions.IsTrue(f.release("web").Status.Conditions, rollbackv1.ConditionRolledBack))

	// A Secret planted under web's next snapshot name, labelled as a snapshot, is not taken.
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: snapshot.HeadName("web", 3), Labels: map[string]string{
		snapshot.LabelRelease: "web", snapshot.LabelNumber: "3", snapshot.LabelChunk: "0"}}, Type: snapshot.SecretType}
	_, err = env.Kube.CoreV1().Secrets(f.ns).Create(f.ctx, planted, metav1.CreateOptions{})
	require.NoError(t, err)
	f.configMap("web-src", map[string]string{"web.yaml": configMapYAML("web-config", "3")})
	f.patchVersion("web", "v3")
	mr = f.waitRelease("web", "the squatted name reported", stalledWith(manifestrelease.ReasonSnapshotNameTaken))
	assert.Contains(t, condition(mr, conditions.Stalled).Message, snapshot.HeadName("web", 3))
	_, err = env.Kube.CoreV1().Secrets(f.ns).Get(f.ctx, snapshot.HeadName("web", 3), metav1.GetOptions{})
	assert.NoError(t, err, "the planted Secret is left alone")
	assert.Equal(t, "1", f.configMapValue("web-config"))
}

const brokenDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: broken
spec:
  selector:
    matchLabels: {app: broken}
  template:
    metadata:
      labels: {app: broken}
    spec:
      containers:
        - name: broken
          image: broken:1
`

func (f *fixture) configMapValue(name string) string {
	f.t.Helper()
	cm, err := env.Kube.CoreV1().ConfigMaps(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return cm.Data["v"]
}

func (f *fixture) annotateConfigMap(name, key, value string) {
	f.t.Helper()
	cm, err := env.Kube.CoreV1().ConfigMaps(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[key] = value
	_, err = env.Kube.CoreV1().ConfigMaps(f.ns).Update(f.ctx, cm, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}
