// Command health-controller runs the Sluice health controller: the health of HealthCheck targets
// from RFC-0009 CEL expressions and kstatus, optionally published as CommitStatuses.
package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/health-controller/internal/reconciler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	cfg := reconciler.DefaultConfig()
	cfg.AddFlags(flag.CommandLine)
	os.Exit(manager.Main("health-controller", flag.CommandLine, os.Args[1:], func(m *manager.Manager) error {
		_, err := reconciler.Setup(m, cfg)
		return err
	}))
}
