package testenv

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// Main starts one control plane for a whole test package, runs the tests and stops it. Call it
// from TestMain. With -short no control plane starts and *env stays nil: integration tests must
// skip themselves with SkipIfShort.
func Main(m *testing.M, opts Options, env **Env) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop local control plane:", err)
	}
	os.Exit(code)
}

// SkipIfShort skips an integration test under -short.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local control plane")
	}
}
