package setup

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/crds"
)

func TestConfigFlagsAndValidate(t *testing.T) {
	var cfg Config
	fs := flag.NewFlagSet("rollback-controller", flag.ContinueOnError)
	cfg.AddFlags(fs)
	assert.Equal(t, Defaults(), cfg, "the flags start from the defaults")
	require.NoError(t, cfg.Validate())

	require.NoError(t, fs.Parse([]string{
		"--git-cache-dir=/var/cache/sluice-git", "--revert-poll-interval=30s", "--stalled-recheck-interval=2m",
		"--manifest-git-cache-dir=/var/cache/sluice-manifests-git", "--snapshot-max-chunks=3",
		"--manifest-max-bytes=1048576", "--release-recheck-interval=10s",
	}))
	assert.Equal(t, Config{
		GitCacheDir: "/var/cache/sluice-git", PollInterval: 30 * time.Second, StalledRecheck: 2 * time.Minute,
		ManifestGitCacheDir: "/var/cache/sluice-manifests-git", SnapshotMaxChunks: 3, ManifestMaxBytes: 1 << 20,
		ReleaseRecheck: 10 * time.Second, DefaultServiceAccount: "default",
	}, cfg)
	assert.Equal(t, "default", cfg.DefaultServiceAccount,
		"a release that names no ServiceAccount acts as its namespace's default unless cluster-wide mode is asked for")
	require.NoError(t, fs.Parse([]string{"--default-service-account="}))
	assert.Empty(t, cfg.DefaultServiceAccount, "cluster-wide mode is an explicit, empty flag")
	require.NoError(t, cfg.Validate())

	for flagName, breakIt := range map[string]func(*Config){
		"--git-cache-dir":            func(c *Config) { c.GitCacheDir = "" },
		"--revert-poll-interval":     func(c *Config) { c.PollInterval = 0 },
		"--stalled-recheck-interval": func(c *Config) { c.StalledRecheck = -time.Second },
		"--manifest-git-cache-dir":   func(c *Config) { c.ManifestGitCacheDir = "" },
		"--snapshot-max-chunks":      func(c *Config) { c.SnapshotMaxChunks = 0 },
		"--manifest-max-bytes":       func(c *Config) { c.ManifestMaxBytes = 0 },
		"--release-recheck-interval": func(c *Config) { c.ReleaseRecheck = 0 },
	} {
		c := Defaults()
		breakIt(&c)
		assert.ErrorContains(t, c.Validate(), flagName)
	}
	broken := Config{}
	err := broken.Validate()
	require.Error(t, err)
	for _, flagName := range []string{"--git-cache-dir", "--manifest-git-cache-dir", "--release-recheck-interval"} {
		assert.ErrorContains(t, err, flagName, "every problem is reported at once")
	}
}

// A missing peer CRD is named with the chart that owns it, so the Stalled message says what to
// install.
func TestMissingPeerCRDsNameTheirCharts(t *testing.T) {
	msg := crds.Message(peerKinds)
	assert.Contains(t, msg, "the CRDs promotionstrategies.promoter.sluice.dev, pullrequests.promoter.sluice.dev, commitstatuses.commitstatus.sluice.dev, "+
		"scmrepositories.scm.sluice.dev, scmproviders.scm.sluice.dev are not installed: install the promoter-controller and commitstatus-controller charts")
	assert.Contains(t, msg, "replicaCount: 0")
}
