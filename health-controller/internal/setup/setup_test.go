package setup

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFlagsAndValidate(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "sluice")
	var cfg Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.AddFlags(fs)
	assert.Equal(t, Defaults(), cfg)
	assert.Equal(t, "sluice", cfg.LibraryNamespace)
	require.NoError(t, cfg.Validate())
	assert.True(t, cfg.NoCrossNamespaceRefs, "locked down by default")
	assert.Equal(t, "default", cfg.DefaultServiceAccount, "locked down by default, as the chart")
	require.NoError(t, fs.Parse([]string{"--default-service-account=", "--no-cross-namespace-refs=false"}))
	assert.Empty(t, cfg.DefaultServiceAccount, "the open mode is an explicit, empty flag")
	assert.False(t, cfg.NoCrossNamespaceRefs)
	require.NoError(t, cfg.Validate())
	cfg.DefaultServiceAccount = "Not A Name"
	assert.ErrorContains(t, cfg.Validate(), "--default-service-account")
	cfg = Defaults()

	require.NoError(t, fs.Parse([]string{"--cel-cost-limit", "0"}))
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--cel-cost-limit must be positive")

	cfg = Defaults()
	cfg.LibraryName = "Not_A_Name"
	assert.ErrorContains(t, cfg.Validate(), "--library-configmap-name")
	cfg = Defaults()
	cfg.LibraryNamespace = ""
	assert.ErrorContains(t, cfg.Validate(), "--library-configmap-namespace")
	cfg.LibraryName = ""
	assert.NoError(t, cfg.Validate(), "without a library its namespace does not matter")
}
