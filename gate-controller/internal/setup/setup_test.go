package setup

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
)

func TestConfigFlagsAndValidate(t *testing.T) {
	var cfg Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.AddFlags(fs)
	assert.Equal(t, kinds.Defaults(), cfg.Targets)
	require.NoError(t, cfg.Validate())

	require.NoError(t, fs.Parse([]string{"--targets", "kustomizations.kustomize.toolkit.fluxcd.io=spec"}))
	assert.Equal(t, []kinds.Target{{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations", Mode: hold.ModeSpec}}, cfg.Targets)
	require.NoError(t, cfg.Validate())
	assert.Error(t, fs.Parse([]string{"--targets", "kustomizations=sometimes"}))

	cfg.Targets = []kinds.Target{{Group: "x.example", Resource: "widgets", Mode: "sometimes"}}
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "annotation, spec or both")
	assert.NoError(t, (&Config{}).Validate(), "empty means the defaults")
}
