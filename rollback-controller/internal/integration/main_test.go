// Package integration runs the rollback-controller against the real local control plane, with
// real git repositories served by the test and the promoter-controller running as a real binary
// beside it: reverts are carried by the promoter's PullRequests, as in a cluster.
package integration

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/rollback-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, &env)
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds the promoter-controller and rollback-controller binaries once per test run.
func binaries(t testing.TB) (promoter, rollback string) {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "sluice-rollback-it-"); buildErr != nil {
			return
		}
		for _, pkg := range []string{"../../../promoter-controller/cmd/promoter-controller", "../../cmd/rollback-controller"} {
			out, err := exec.Command("go", "build", "-o", binDir, pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	require.NoError(t, buildErr)
	return filepath.Join(binDir, "promoter-controller"), filepath.Join(binDir, "rollback-controller")
}

// process is a controller binary running against the control plane.
type process struct {
	cmd *exec.Cmd
	log *os.File
}

// runProcess starts bin watching namespace ns, with its output to log and extra flags.
func runProcess(t testing.TB, bin, ns string, log *os.File, flags ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"--kubeconfig", env.Kubeconfig, "--leader-elect=false", "--namespace", ns,
		"--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", "--log-format", "text"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	return cmd
}

// logFile is one file for the output of a controller's runs, printed when the test fails.
func logFile(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = f.Close()
		if t.Failed() {
			if out, err := os.ReadFile(f.Name()); err == nil {
				t.Logf("%s log:\n%s", name, testenv.Tail(out, 120))
			}
		}
	})
	return f
}

// startPromoter runs the promoter-controller binary for namespace ns until the test ends.
func startPromoter(t testing.TB, ns string, flags ...string) {
	t.Helper()
	bin, _ := binaries(t)
	runProcess(t, bin, ns, logFile(t, "promoter-controller"), append([]string{"--git-cache-dir", t.TempDir()}, flags...)...)
}

// rollbackController is the rollback-controller running in-process.
type rollbackController struct {
	m    *manager.Manager
	stop func()
}

// startRollback runs the rollback-controller in-process for namespace ns, polling open reverts
// every pollInterval.
func startRollback(t testing.TB, cfg *rest.Config, ns string, pollInterval time.Duration) *rollbackController {
	t.Helper()
	opts := options.Defaults("rollback-controller")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "127.0.0.1:0", "127.0.0.1:0"
	opts.LeaderElect, opts.Namespace = false, ns
	panics := newPanicCounter()
	m, err := manager.New("rollback-controller", opts, cfg, slog.New(panics))
	require.NoError(t, err)
	// The flags' defaults, as the binary starts from; then this test's own.
	var rcfg setup.Config
	fs := flag.NewFlagSet("rollback-controller", flag.ContinueOnError)
	rcfg.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--git-cache-dir", t.TempDir(), "--manifest-git-cache-dir", t.TempDir()}))
	rcfg.PollInterval, rcfg.StalledRecheck = pollInterval, time.Second
	require.NoError(t, rcfg.Validate())
	require.NoError(t, setup.Setup(m, rcfg))
	t.Cleanup(func() { assert.Zero(t, panics.count.Load(), "reconciles panicked") })
	stop := testenv.RunManager(t, m)
	return &rollbackController{m: m, stop: stop}
}

// panicCounter counts the runner's "reconcile panicked" records, in this handler and the ones
// derived from it: the runner recovers panics, and a test must still fail on one.
type panicCounter struct {
	slog.Handler
	count *atomic.Int64
}

func newPanicCounter() *panicCounter {
	return &panicCounter{Handler: slog.NewTextHandler(io.Discard, nil), count: &atomic.Int64{}}
}

func (h *panicCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "reconcile panicked" {
		h.count.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *panicCounter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &panicCounter{Handler: h.Handler.WithAttrs(attrs), count: h.count}
}

func (h *panicCounter) WithGroup(name string) slog.Handler {
	return &panicCounter{Handler: h.Handler.WithGroup(name), count: h.count}
}
