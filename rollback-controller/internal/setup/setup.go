// Package setup wires the rollback-controller's reconcilers into a manager: of ManifestReleases
// (internal/manifestrelease), RevertCommits (internal/revertcommit) and RollbackPolicies
// (internal/rollbackpolicy), in the style every controller's setup follows (docs/architecture.md,
// "One setup style"): Config, Defaults, AddFlags, Validate and Setup here; what the kinds share
// in wiring.go (the peer kinds of other charts among it); one file per kind.
package setup

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/revertcommit"
)

// Queue names of the reconcilers, which label their logs and metrics.
const (
	ManifestReleaseControllerName = "manifestreleases"
	RevertCommitControllerName    = "revertcommit"
	RollbackPolicyControllerName  = "rollbackpolicy"
)

// Config is the rollback-controller's own configuration, beside the shared flags of
// pkg/runtime/options.
type Config struct {
	// GitCacheDir holds the git cache of reverts.
	GitCacheDir string
	// PollInterval: see revertcommit.Reconciler.PollInterval.
	PollInterval time.Duration
	// StalledRecheck: see revertcommit.Reconciler.StalledRecheck; it paces RollbackPolicies
	// waiting for peer CRDs too.
	StalledRecheck time.Duration

	// ManifestGitCacheDir keeps the repositories ManifestRelease git sources are read from.
	ManifestGitCacheDir string
	// SnapshotMaxChunks is the most Secrets one ManifestRelease snapshot may take.
	SnapshotMaxChunks int
	// ManifestMaxBytes bounds the manifests read from one ManifestRelease source.
	ManifestMaxBytes int64
	// ReleaseRecheck: see manifestrelease.Reconciler.StalledRecheck.
	ReleaseRecheck time.Duration
	// DefaultServiceAccount: see manifestrelease.Identities.DefaultServiceAccount.
	DefaultServiceAccount string
}

// Defaults returns the configuration the flags start from.
func Defaults() Config {
	return Config{
		GitCacheDir:         filepath.Join(os.TempDir(), "sluice-rollback-git"),
		PollInterval:        revertcommit.DefaultPollInterval,
		StalledRecheck:      revertcommit.DefaultStalledRecheck,
		ManifestGitCacheDir: filepath.Join(os.TempDir(), "sluice-rollback-manifests-git"),
		SnapshotMaxChunks:   snapshot.DefaultMaxChunks,
		ManifestMaxBytes:    64 << 20,
		ReleaseRecheck:      time.Minute,
		// Locked down however the binary is started: a release that names no ServiceAccount acts
		// as its namespace's "default", never with the controller's own rights.
		DefaultServiceAccount: "default",
	}
}

// AddFlags registers the controller's own flags on fs, starting from Defaults: manager.Main
// starts from a zero Config.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	*c = Defaults()
	fs.StringVar(&c.GitCacheDir, "git-cache-dir", c.GitCacheDir,
		"Folder of the git cache of reverts: one bare repository per remote, kept across restarts.")
	fs.DurationVar(&c.PollInterval, "revert-poll-interval", c.PollInterval,
		"How often an open revert looks at git for a merge made outside Sluice; PullRequest and PromotionStrategy changes are seen at once.")
	fs.DurationVar(&c.StalledRecheck, "stalled-recheck-interval", c.StalledRecheck,
		"How often a RevertCommit stalled on something not watched (a Secret, credentials) looks again.")
	fs.StringVar(&c.ManifestGitCacheDir, "manifest-git-cache-dir", c.ManifestGitCacheDir,
		"Folder of the git repositories ManifestRelease sources are read from; it survives restarts.")
	fs.IntVar(&c.SnapshotMaxChunks, "snapshot-max-chunks", c.SnapshotMaxChunks,
		"Most Secrets (of at most 1 MiB each) one ManifestRelease snapshot may take; a larger version is refused, Stalled.")
	fs.Int64Var(&c.ManifestMaxBytes, "manifest-max-bytes", c.ManifestMaxBytes,
		"Most bytes of manifests read from one ManifestRelease source.")
	fs.DurationVar(&c.ReleaseRecheck, "release-recheck-interval", c.ReleaseRecheck,
		"How often a ManifestRelease stalled on the cluster (a CRD that still has objects) is looked at again.")
	fs.StringVar(&c.DefaultServiceAccount, "default-service-account", c.DefaultServiceAccount,
		"ServiceAccount, of its own namespace, that a ManifestRelease without spec.serviceAccountName acts as (impersonated). "+
			"Set it empty (--default-service-account=) only to let such releases act with the controller's own, cluster-wide rights: a warning is logged at start.")
}

// Validate rejects a configuration no reconciler could run with, in words a person can act on.
func (c *Config) Validate() error {
	var errs []error
	if c.GitCacheDir == "" {
		errs = append(errs, errors.New("--git-cache-dir must name a folder"))
	}
	if c.PollInterval <= 0 || c.StalledRecheck <= 0 {
		errs = append(errs, errors.New("--revert-poll-interval and --stalled-recheck-interval must be positive, for example 1m"))
	}
	if c.ManifestGitCacheDir == "" {
		errs = append(errs, errors.New("--manifest-git-cache-dir must name a folder"))
	}
	if c.SnapshotMaxChunks < 1 || c.ManifestMaxBytes < 1 {
		errs = append(errs, errors.New("--snapshot-max-chunks and --manifest-max-bytes must be positive"))
	}
	if bad := validation.IsDNS1123Subdomain(c.DefaultServiceAccount); c.DefaultServiceAccount != "" && len(bad) > 0 {
		errs = append(errs, fmt.Errorf("--default-service-account %q is not a ServiceAccount name: %v", c.DefaultServiceAccount, bad))
	}
	if c.ReleaseRecheck <= 0 {
		errs = append(errs, errors.New("--release-recheck-interval must be positive, for example 1m"))
	}
	return errors.Join(errs...)
}

// Setup registers each reconciler. An error is returned, never only logged, so the process
// exits with the reason instead of running without a reconciler.
func Setup(m *manager.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.DefaultServiceAccount == "" {
		m.Log.Warn("--default-service-account is empty: a ManifestRelease without spec.serviceAccountName acts with this controller's own rights, " +
			"so anyone who may create one in any namespace may apply what this controller may (cluster-wide mode); set --default-service-account=default to lock it down")
	}
	w, err := newWiring(m, cfg)
	if err != nil {
		return err
	}
	for _, add := range []func() error{w.addManifestReleases, w.addRevertCommits, w.addRollbackPolicies, w.startPeers} {
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}
