// Command health-controller runs the Sluice health controller: the health of HealthCheck targets
// from RFC-0009 CEL expressions and kstatus, optionally published as CommitStatuses.
package main

import (
	"os"

	"github.com/sluicehq/sluice/health-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/runtime/manager"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(manager.Main("health-controller", setup.Setup))
}
