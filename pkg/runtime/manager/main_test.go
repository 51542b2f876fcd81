package manager_test

import (
	"flag"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/version"
)

// --version answers without a cluster and without setting anything up.
func TestMainPrintsVersionAndExits(t *testing.T) {
	oldVersion, oldStdout := version.Version, os.Stdout
	t.Cleanup(func() { version.Version, os.Stdout = oldVersion, oldStdout })
	version.Version = "7.8.9"
	r, w, err := os.Pipe()
	require.NoError(t, err)
	os.Stdout = w

	fs := flag.NewFlagSet("example-controller", flag.ContinueOnError)
	code := manager.Main("example-controller", fs, []string{"--version", "--kubeconfig", "/nonexistent"}, func(*manager.Manager) error {
		t.Error("setup must not run for --version")
		return nil
	})
	require.NoError(t, w.Close())
	out, err := io.ReadAll(r)
	require.NoError(t, err)

	assert.Equal(t, 0, code)
	assert.Regexp(t, `^example-controller 7\.8\.9 \(`, string(out))
}
