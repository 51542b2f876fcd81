package testenv

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Main starts one control plane for a whole test package, runs the tests, runs the OnStop hooks
// and stops it. Call it from TestMain. With -short no control plane starts and *env stays nil:
// integration tests must skip themselves with SkipIfShort.
func Main(m *testing.M, opts Options, env **Env) {
	flag.Parse()
	if testing.Short() {
		code := m.Run()
		runStopHooks()
		os.Exit(code)
	}
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	runStopHooks()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop local control plane:", err)
	}
	os.Exit(code)
}

var (
	stopMu    sync.Mutex
	stopHooks []func()
)

// OnStop registers fn to run once every test of the package has run, before Main stops the
// control plane: for what tests share across the package (a controller started once, a Gitea
// server), which must let go of the API server before it stops. Hooks run in reverse order.
func OnStop(fn func()) {
	stopMu.Lock()
	defer stopMu.Unlock()
	stopHooks = append(stopHooks, fn)
}

func runStopHooks() {
	stopMu.Lock()
	hooks := stopHooks
	stopHooks = nil
	stopMu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
}

// SkipIfShort skips an integration test under -short.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local control plane")
	}
}
