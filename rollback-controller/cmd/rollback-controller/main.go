// Command rollback-controller runs the Sluice rollback controller: RevertCommits and automated
// rollback of environment branches, and ManifestReleases with numbered snapshots (RFC-0002).
package main

import (
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/rollback-controller/internal/setup"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(manager.Main("rollback-controller", setup.Setup))
}
