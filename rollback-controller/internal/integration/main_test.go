// Package integration runs the rollback-controller against the real local control plane, with
// real git repositories served by the test and the promoter-controller running as a real binary
// beside it: reverts are carried by the promoter's PullRequests, as in a cluster.
package integration

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/exec"
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

// binaries builds the promoter-controller and rollback-controller binaries once per test run.
func binaries(t testing.TB) (promoter, rollback string) {
	t.Helper()
	return testenv.BuildCommand(t, "promoter-controller/cmd/promoter-controller"), testenv.BuildCommand(t, "rollback-controller/cmd/rollback-controller")
}

// runProcess starts bin watching namespace ns, logging text to log, with extra flags.
func runProcess(t testing.TB, bin, ns string, log *os.File, flags ...string) *exec.Cmd {
	t.Helper()
	return env.StartController(t, bin, ns, log, append([]string{"--log-format", "text"}, flags...)...)
}

// startPromoter runs the promoter-controller binary for namespace ns until the test ends.
func startPromoter(t testing.TB, ns string, flags ...string) {
	t.Helper()
	bin, _ := binaries(t)
	runProcess(t, bin, ns, testenv.LogFile(t, "promoter-controller"), append([]string{"--git-cache-dir", t.TempDir()}, flags...)...)
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
