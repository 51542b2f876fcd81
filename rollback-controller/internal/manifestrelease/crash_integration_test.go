package manifestrelease_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
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
	bin := buildController(t)
	cacheDir := t.TempDir()
	log := controllerLog(t)

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
	kill(t, first, 1)

	second := runControllerProcess(t, bin, f.ns, cacheDir, log)
	f.waitJob("smoke")
	kill(t, second, 2)

	// The test fails, and the rollback then waits for v1's Deployment, which is not ready yet.
	f.setNotReady("web", true)
	f.setJobOutcome(func(*batchv1.Job) string { return "fail" })
	third := runControllerProcess(t, bin, f.ns, cacheDir, log)
	mr := f.waitRelease("web", "the rollback recorded", func(m *rollbackv1.ManifestRelease) bool {
		return m.Status.Operation != nil && m.Status.Operation.Action == rollbackv1.ActionRollback
	})
	assert.Equal(t, int64(1), mr.Status.Operation.Number)
	kill(t, third, 3)

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

func kill(t *testing.T, cmd *exec.Cmd, run int) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	var exit *exec.ExitError
	err := cmd.Wait()
	require.Truef(t, errors.As(err, &exit), "run %d was not killed: %v", run, err)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.Truef(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "run %d exited before its kill -9: %v", run, exit)
}

func buildController(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "rollback-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/rollback-controller").CombinedOutput(); err != nil {
		tb.Fatalf("build the controller: %v\n%s", err, out)
	}
	return bin
}

// runControllerProcess runs the controller binary against the control plane, watching only ns,
// in cluster-wide mode (as startController does: the test is about crashes, not identities).
func runControllerProcess(tb testing.TB, bin, ns, cacheDir string, log *os.File) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--leader-elect=false", "--namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--default-service-account=",
		"--manifest-git-cache-dir", cacheDir, "--release-recheck-interval", "1s")
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(tb, cmd.Start())
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	return cmd
}

// controllerLog is one file for the output of every run, printed when the test fails.
func controllerLog(t *testing.T) *os.File {
	t.Helper()
	file, err := os.OpenFile(filepath.Join(t.TempDir(), "controller.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = file.Close()
		if t.Failed() {
			if out, err := os.ReadFile(file.Name()); err == nil {
				t.Logf("controller log:\n%s", out)
			}
		}
	})
	return file
}
