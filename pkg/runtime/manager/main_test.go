package manager

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/version"
)

// testConfig is a controller's own configuration, as internal/setup.Config is.
type testConfig struct{ Widgets int }

func (c *testConfig) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Widgets, "widgets", 3, "How many widgets.")
}

func (c *testConfig) Validate() error {
	if c.Widgets <= 0 {
		return errors.New("--widgets must be positive")
	}
	return nil
}

// A kubeconfig that parses; nothing is contacted before Run.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	return path
}

func TestMainRejectsInvalidFlagsBeforeSetup(t *testing.T) {
	keepGlobalLoggers(t)
	var stderr bytes.Buffer
	called := false
	code := mainWith("widget-controller", flag.NewFlagSet("test", flag.ContinueOnError),
		[]string{"--widgets=0", "--kubeconfig", unreachableKubeconfig(t)}, io.Discard, &stderr,
		func(*Manager, testConfig) error { called = true; return nil })
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "--widgets must be positive")
	assert.False(t, called)
}

func TestMainHandsTheControllersFlagsToSetupAndReportsItsError(t *testing.T) {
	keepGlobalLoggers(t)
	var stderr bytes.Buffer
	var got testConfig
	code := mainWith("widget-controller", flag.NewFlagSet("test", flag.ContinueOnError),
		[]string{"--widgets=7", "--kubeconfig", unreachableKubeconfig(t)}, io.Discard, &stderr,
		func(m *Manager, cfg testConfig) error {
			got = cfg
			return errors.New("no widget informer")
		})
	assert.Equal(t, 1, code, "a setup error ends the process")
	assert.Equal(t, 7, got.Widgets)
	assert.Contains(t, stderr.String(), "no widget informer")
}

// --version answers without a cluster and without setting anything up.
func TestMainPrintsVersionAndExits(t *testing.T) {
	oldVersion := version.Version
	t.Cleanup(func() { version.Version = oldVersion })
	version.Version = "7.8.9"
	var stdout bytes.Buffer
	code := mainWith("example-controller", flag.NewFlagSet("example-controller", flag.ContinueOnError),
		[]string{"--version", "--kubeconfig", "/nonexistent"}, &stdout, io.Discard,
		func(*Manager, testConfig) error {
			t.Error("setup must not run for --version")
			return nil
		})
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^example-controller 7\.8\.9 \(`, stdout.String())
}
