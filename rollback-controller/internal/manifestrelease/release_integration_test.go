package manifestrelease_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/testenv"
)

// The RFC-0002 story on ConfigMap sources: v1 installs and passes its test; v2 adds an object
// and fails its test, so v1 comes back and v2's object goes; v2 is not tried again until the
// source changes; v3 passes. Test objects never outlive their run.
func TestUpgradeTestFailureRollsBackAndPrunesWhatTheNewVersionAdded(t *testing.T) {
	f := newFixture(t)
	f.setJobOutcome(f.failWhenImage(":2.0"))
	f.configMap("tests", map[string]string{"smoke.yaml": smokeTest})
	f.configMap("web-src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), Version: "v1", Test: smokeTests(false), Timeout: seconds(60)})

	mr := f.waitRelease("web", "v1 deployed", deployed(1))
	assert.Equal(t, "v1", mr.Status.DeployedVersion)
	assert.Equal(t, metav1.ConditionTrue, condition(mr, rollbackv1.ConditionTestSuccess).Status)
	assert.Equal(t, []int64{1}, f.snapshotNumbers("web"))
	assert.Equal(t, []string{"ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"), "the test Job is deleted after its run")
	head, err := env.Kube.CoreV1().Secrets(f.ns).Get(f.ctx, "web.1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, snapshot.SecretType, head.Type)
	assert.True(t, *head.Immutable)
	assert.Equal(t, "v1", head.Annotations[rollbackv1.VersionAnnotation])
	f.waitMetric(1, "sluice_manifestrelease_upgrades_total", "web", "result", "succeeded")
	assert.Equal(t, 1.0, f.metric("sluice_manifestrelease_tests_total", "web", "result", "passed"))
	f.assertSnapshotMetrics("web", 1)

	f.configMap("web-src", app("nginx:2.0", "extra"))
	f.patchVersion("web", "v2")
	mr = f.waitRelease("web", "v2 rolled back", rolledBackFrom(2))
	assert.Equal(t, int64(1), mr.Status.UpgradeNumber)
	assert.Equal(t, "v1", mr.Status.DeployedVersion)
	rolledBack := condition(mr, rollbackv1.ConditionRolledBack)
	assert.Contains(t, rolledBack.Message, "rolled back to v1 (snapshot 1)")
	assert.Contains(t, rolledBack.Message, "Job.batch/"+f.ns+"/smoke failed", "names the test that failed")
	assert.Equal(t, metav1.ConditionFalse, condition(mr, rollbackv1.ConditionTestSuccess).Status)
	assert.True(t, conditions.IsTrue(mr.Status.Conditions, conditions.Stalled), "nothing more happens until the source changes")
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))
	assert.Equal(t, []string{"ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"), "v2's extra ConfigMap is deleted, the test Job too")
	assert.Equal(t, []int64{1, 2}, f.snapshotNumbers("web"))
	assert.Equal(t, rollbackv1.TestFailed, mr.Status.History[0].Test)
	assert.Equal(t, "v2", mr.Status.LastAttemptedVersion)
	f.waitMetric(1, "sluice_manifestrelease_rollbacks_total", "web", "trigger", "automatic")
	assert.Equal(t, 1.0, f.metric("sluice_manifestrelease_upgrades_total", "web", "result", "rolled_back"))
	assert.Equal(t, 1.0, f.metric("sluice_manifestrelease_tests_total", "web", "result", "failed"))
	f.assertSnapshotMetrics("web", 2)

	// The same manifests again: not retried. A spec change retries; here only a refresh.
	mr = f.refresh("web")
	assert.Equal(t, int64(1), mr.Status.UpgradeNumber)
	assert.Equal(t, []int64{1, 2}, f.snapshotNumbers("web"), "a failed version is not tried again")

	f.configMap("web-src", app("nginx:3.0", "extra"))
	f.patchVersion("web", "v3")
	mr = f.waitRelease("web", "v3 deployed", deployed(3))
	assert.Equal(t, "v3", mr.Status.DeployedVersion)
	assert.Equal(t, metav1.ConditionFalse, condition(mr, rollbackv1.ConditionRolledBack).Status, "RolledBack turns False once an upgrade succeeds")
	assert.True(t, conditions.IsTrue(mr.Status.Conditions, conditions.Ready))
	assert.Equal(t, []string{"ConfigMap/extra", "ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"))
	assert.Equal(t, []int64{3, 2, 1}, historyNumbers(mr))
	f.waitMetric(2, "sluice_manifestrelease_upgrades_total", "web", "result", "succeeded")
	assert.Equal(t, 2.0, f.metric("sluice_manifestrelease_tests_total", "web", "result", "passed"))
	assert.Equal(t, 1.0, f.metric("sluice_manifestrelease_tests_total", "web", "result", "failed"), "counted once")
	assert.Equal(t, 1.0, f.metric("sluice_manifestrelease_upgrades_total", "web", "result", "rolled_back"), "counted once")
	assert.Equal(t, 1.0, f.metric("sluice_manifestrelease_rollbacks_total", "web", "trigger", "automatic"), "counted once")
	assert.Zero(t, f.metric("sluice_manifestrelease_upgrades_total", "web", "result", "failed"))
	f.assertSnapshotMetrics("web", 3)
	for _, reason := range []string{"UpgradeStarted", "UpgradeSucceeded", "UpgradeFailed", "RolledBack"} {
		f.waitFor("a "+reason+" Event", func() bool { return strings.Contains(strings.Join(f.events("web"), "\n"), reason+":") })
	}
}

// With ignoreFailures a failed test is reported and the upgrade kept.
func TestFailedTestWithIgnoreFailuresKeepsTheUpgrade(t *testing.T) {
	f := newFixture(t)
	f.setJobOutcome(f.failWhenImage(":2.0"))
	f.configMap("tests", map[string]string{"smoke.yaml": smokeTest})
	f.configMap("web-src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), Version: "v1", Test: smokeTests(true), Timeout: seconds(60)})
	f.waitRelease("web", "v1 deployed", deployed(1))

	f.configMap("web-src", app("nginx:2.0"))
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "v2 deployed", deployed(2))
	assert.Equal(t, "nginx:2.0", f.deploymentImage("web"))
	assert.True(t, conditions.IsTrue(mr.Status.Conditions, conditions.Ready))
	tests := condition(mr, rollbackv1.ConditionTestSuccess)
	assert.Equal(t, metav1.ConditionFalse, tests.Status)
	assert.Contains(t, tests.Message, "smoke")
	assert.Equal(t, "absent", string(condition(mr, rollbackv1.ConditionRolledBack).Status))
	assert.Equal(t, rollbackv1.TestFailed, mr.Status.History[0].Test)
}

// A version whose Deployment never becomes healthy is rolled back when the timeout passes, and
// the message names the Deployment.
func TestHealthTimeoutRollsBack(t *testing.T) {
	f := newFixture(t)
	f.configMap("web-src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), Version: "v1", Timeout: seconds(3)})
	f.waitRelease("web", "v1 deployed", deployed(1))

	f.setNotReady("web", true)
	f.configMap("web-src", app("nginx:2.0"))
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "v2 rolled back", rolledBackFrom(2))
	rolledBack := condition(mr, rollbackv1.ConditionRolledBack)
	assert.Contains(t, rolledBack.Message, "Deployment.apps/"+f.ns+"/web")
	assert.Contains(t, mr.Status.History[0].Message, "not healthy after 3s")
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))
}

// The first version has nothing to roll back to: it stays, Stalled, held until the source changes.
func TestFailedFirstInstallStaysAndIsHeld(t *testing.T) {
	f := newFixture(t)
	f.setJobOutcome(func(*batchv1.Job) string { return "fail" })
	f.configMap("tests", map[string]string{"smoke.yaml": smokeTest})
	f.configMap("web-src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), Version: "v1", Test: smokeTests(false), Timeout: seconds(60)})
	mr := f.waitRelease("web", "v1 failed", func(m *rollbackv1.ManifestRelease) bool {
		return m.Status.LastAttemptFailed && m.Status.Operation == nil
	})
	stalled := condition(mr, "Stalled")
	assert.Equal(t, "InstallFailed", stalled.Reason)
	assert.Contains(t, stalled.Message, "no earlier version to roll back to")
	f.waitMetric(1, "sluice_manifestrelease_upgrades_total", "web", "result", "failed")
	assert.Equal(t, 1.0, f.metric("sluice_manifestrelease_tests_total", "web", "result", "failed"))
	assert.Zero(t, f.metric("sluice_manifestrelease_rollbacks_total", "web", "trigger", "automatic"), "nothing to roll back to")
	assert.Zero(t, mr.Status.UpgradeNumber)
	assert.Equal(t, []string{"ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"))
}

// A rollback by hand needs a deployed version to roll back from: after a first install that
// failed there is none, so rollback-to=1 is refused, as it is on a release that runs snapshot 1,
// and the release stays Stalled on the failed install rather than Ready and RolledBackByHand.
func TestManualRollbackOfAFailedFirstInstallIsRefused(t *testing.T) {
	f := newFixture(t)
	f.setJobOutcome(func(*batchv1.Job) string { return "fail" })
	f.configMap("tests", map[string]string{"smoke.yaml": smokeTest})
	f.configMap("web-src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), Version: "v1", Test: smokeTests(false), Timeout: seconds(60)})
	f.waitRelease("web", "v1 failed", func(m *rollbackv1.ManifestRelease) bool {
		return m.Status.LastAttemptFailed && m.Status.Operation == nil
	})

	f.annotate("web", rollbackv1.RollbackToAnnotation, "1")
	mr := f.waitRelease("web", "the request for 1 handled", func(m *rollbackv1.ManifestRelease) bool { return m.Status.LastHandledRollback == "1" })
	assert.Nil(t, mr.Status.Operation)
	assert.Zero(t, mr.Status.UpgradeNumber)
	assert.Empty(t, mr.Status.DeployedVersion)
	assert.Equal(t, metav1.ConditionStatus("absent"), condition(mr, rollbackv1.ConditionRolledBack).Status, "nothing was rolled back")
	assert.Equal(t, metav1.ConditionFalse, condition(mr, "Ready").Status)
	assert.Equal(t, "InstallFailed", condition(mr, "Stalled").Reason)
	// Events are recorded asynchronously, after the status write.
	f.waitFor("the RollbackRefused Event", func() bool {
		return strings.Contains(strings.Join(f.events("web"), "\n"),
			"RollbackRefused: cannot roll back to snapshot 1: no version of this release was ever deployed, so there is nothing to roll back from; its first install, v1, failed")
	})
	assert.Zero(t, f.metric("sluice_manifestrelease_rollbacks_total", "web", "trigger", "manual"))
}

func (f *fixture) patchVersion(name, version string) {
	f.t.Helper()
	_, err := testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns), name, func(mr *rollbackv1.ManifestRelease) {
		mr.Spec.Version = version
	})
	require.NoError(f.t, err)
}

func historyNumbers(mr *rollbackv1.ManifestRelease) []int64 {
	var out []int64
	for _, h := range mr.Status.History {
		out = append(out, h.Number)
	}
	return out
}
