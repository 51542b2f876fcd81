package manifestrelease_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// The real controller binary is killed with SIGKILL mid-upgrade three times: once the upgrade is
// recorded, while its test Job runs, and while the failed upgrade is rolled back. Each restart
// resumes from the recorded operation; the release ends rolled back, with exactly v1's objects,
// one history entry for the failed attempt, and no test left behind.
func TestKill9MidUpgradeFinishesOrRollsBack(t *testing.T) {
	f := newFixture(t)
	f.setJobOutcome(func(*batchv1.Job) string { return "" }) // tests run until the test decides
	f.configMap("tests", map[string]string{"smoke.yaml": smokeTest})
	f.configMap("src", app("nginx:1.0"))
	bin := testenv.BuildCommand(t, "rollback-controller/cmd/rollback-controller")
	cacheDir := t.TempDir()
	log := testenv.LogFile(t, "controller")

	first := runControllerProcess(t, bin, f.ns, cacheDir, log)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), Version: "v1", Timeout: seconds(120)})
	f.waitRelease("web", "v1 deployed", deployed(1))
	v1Objects := f.liveObjects("web")
	f.updateRelease("web", func(mr *rollbackv1.ManifestRelease) { mr.Spec.Test = smokeTests(false) })
	f.waitRelease("web", "tests enabled, nothing to upgrade", func(m *rollbackv1.ManifestRelease) bool { return m.Status.ObservedGeneration == m.Generation })

	f.configMap("src", app("nginx:2.0", "extra-a", "extra-b"))
	f.patchVersion("web", "v2")
	f.waitRelease("web", "the upgrade recorded", func(m *rollbackv1.ManifestRelease) bool {
		return m.Status.Operation != nil && m.Status.Operation.Action == rollbackv1.ActionUpgrade
	})
	testenv.Kill9(t, first, 1)

	second := runControllerProcess(t, bin, f.ns, cacheDir, log)
	f.waitJob("smoke")
	testenv.Kill9(t, second, 2)

	// The test fails, and the rollback then waits for v1's Deployment, which is not ready yet.
	f.setNotReady("web", true)
	f.setJobOutcome(func(*batchv1.Job) string { return "fail" })
	third := runControllerProcess(t, bin, f.ns, cacheDir, log)
	mr := f.waitRelease("web", "the rollback recorded", func(m *rollbackv1.ManifestRelease) bool {
		return m.Status.Operation != nil && m.Status.Operation.Action == rollbackv1.ActionRollback
	})
	assert.Equal(t, int64(1), mr.Status.Operation.Number)
	testenv.Kill9(t, third, 3)

	f.setNotReady("web", false)
	last := runControllerProcess(t, bin, f.ns, cacheDir, log)
	mr = f.waitRelease("web", "rolled back after the kills", rolledBackFrom(2))
	require.NoError(t, last.Process.Signal(os.Interrupt))
	require.NoError(t, last.Wait(), "the last run stops cleanly")

	assert.Equal(t, int64(1), mr.Status.UpgradeNumber)
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))
	assert.Equal(t, v1Objects, f.liveObjects("web"), "exactly v1's objects: none of v2's, no test Job")
	assert.Equal(t, v1Objects, inventoryNames(mr), "the inventory is v1's")
	entries := 0
	for _, h := range mr.Status.History {
		if h.Number == 2 {
			entries++
			assert.True(t, h.RolledBack)
			assert.Equal(t, rollbackv1.TestFailed, h.Test)
		}
	}
	assert.Equal(t, 1, entries, "one history entry for the failed attempt")
	assert.Equal(t, []int64{1, 2}, f.snapshotNumbers("web"))
	f.waitFor("an OperationResumed Event from each restart", func() bool {
		resumed := 0
		for _, e := range f.events("web") {
			if strings.HasPrefix(e, "OperationResumed:") {
				resumed++
			}
		}
		return resumed >= 3
	})
}

func (f *fixture) waitJob(name string) {
	f.t.Helper()
	f.waitFor("test Job "+name, func() bool {
		_, err := env.Kube.BatchV1().Jobs(f.ns).Get(f.ctx, name, metav1.GetOptions{})
		return err == nil
	})
}

func inventoryNames(mr *rollbackv1.ManifestRelease) []string {
	var out []string
	for _, e := range mr.Status.Inventory {
		out = append(out, e.Kind+"/"+e.Name)
	}
	slices.Sort(out)
	return out
}

// runControllerProcess runs the controller binary against the control plane, watching only ns,
// in cluster-wide mode (as startController does: the test is about crashes, not identities).
func runControllerProcess(tb testing.TB, bin, ns, cacheDir string, log *os.File) *exec.Cmd {
	tb.Helper()
	return env.StartController(tb, bin, ns, log, "--default-service-account=", "--manifest-git-cache-dir", cacheDir, "--release-recheck-interval", "1s")
}
