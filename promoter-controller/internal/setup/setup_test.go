package setup

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFlagsAndValidate(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("promoter", flag.ContinueOnError)
	c.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--git-cache-dir=/var/cache/sluice", "--webhook-bind-address=:9443"}))
	assert.Equal(t, "/var/cache/sluice", c.CacheDir)
	assert.NoError(t, c.Validate())
	assert.True(t, c.webhookEnabled())

	c.WebhookAddress = "0"
	assert.NoError(t, c.Validate())
	assert.False(t, c.webhookEnabled(), "0 disables the receiver")

	c.WebhookAddress = "9443"
	assert.ErrorContains(t, c.Validate(), "is not host:port")
	c.WebhookAddress, c.CacheDir = "0", ""
	assert.ErrorContains(t, c.Validate(), "--git-cache-dir is empty")
}
