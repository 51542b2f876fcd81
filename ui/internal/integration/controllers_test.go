package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/testenv"
)

var (
	buildControllersOnce sync.Once
	controllersDir       string
	buildControllersErr  error
)

// controllerBinary is the binary of a controller of this checkout (promoter-controller,
// rollback-controller), built once per test run: a binary from an earlier `make build` could
// be older than the code under test.
func controllerBinary(t *testing.T, name string) string {
	t.Helper()
	buildControllersOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			buildControllersErr = err
			return
		}
		if controllersDir, buildControllersErr = os.MkdirTemp("", "sluice-ui-it-"); buildControllersErr != nil {
			return
		}
		testenv.OnStop(func() { _ = os.RemoveAll(controllersDir) })
		for _, c := range []string{"promoter-controller", "rollback-controller"} {
			build := exec.Command("go", "build", "-o", controllersDir, "./"+c+"/cmd/"+c)
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				buildControllersErr = fmt.Errorf("go build %s: %v\n%s", c, err, out)
				return
			}
		}
	})
	require.NoError(t, buildControllersErr)
	return filepath.Join(controllersDir, name)
}

// runController runs a controller binary for namespace ns until the test ends; its output is
// printed when the test fails.
func runController(t *testing.T, name, ns string, flags ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	require.NoError(t, err)
	args := append([]string{"--kubeconfig", env.Kubeconfig, "--leader-elect=false", "--namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, flags...)
	cmd := exec.Command(controllerBinary(t, name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		_ = log.Close()
		if t.Failed() {
			if out, err := os.ReadFile(log.Name()); err == nil {
				t.Logf("%s log:\n%s", name, testenv.Tail(out, 80))
			}
		}
	})
}
