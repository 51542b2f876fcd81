// Command rollback-controller runs the Sluice rollback controller: RevertCommits and automated
// rollback of environment branches, and ManifestReleases with numbered snapshots (RFC-0002).
package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/rollback-controller/internal/setup"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	var cfg setup.Config
	cfg.AddFlags(flag.CommandLine)
	os.Exit(manager.Main("rollback-controller", flag.CommandLine, os.Args[1:], func(m *manager.Manager) error {
		if err := cfg.Validate(); err != nil {
			return err
		}
		return setup.Setup(m, cfg)
	}))
}
