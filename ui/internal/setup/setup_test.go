package setup

import (
	"flag"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFlagsAndValidate(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var cfg Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.AddFlags(fs)
	assert.Equal(t, IdentityKubeconfig, cfg.Identity, "outside a cluster: local mode")
	assert.Equal(t, "127.0.0.1:8092", cfg.Listen, "local mode serves on loopback")
	require.NoError(t, cfg.Validate())

	require.NoError(t, fs.Parse([]string{"--identity", "proxy", "--trusted-proxies", "10.0.0.0/8, 127.0.0.1/32", "--listen", ":8092"}))
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}, cfg.TrustedProxies)
	require.NoError(t, cfg.Validate())
	assert.Error(t, fs.Parse([]string{"--trusted-proxies", "everyone"}))

	cfg.Identity = "admin"
	assert.ErrorContains(t, cfg.Validate(), "kubeconfig, proxy or none")
	cfg.Identity, cfg.Listen = IdentityNone, "8092"
	assert.ErrorContains(t, cfg.Validate(), "host:port")
}

func TestInAClusterTheUIIsReadOnlyByDefault(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	var cfg Config
	cfg.AddFlags(flag.NewFlagSet("test", flag.ContinueOnError))
	assert.Equal(t, IdentityNone, cfg.Identity)
}
