// Command health-controller runs the Sluice health controller: the health of HealthCheck targets
// from RFC-0009 CEL expressions and kstatus, optionally published as CommitStatuses.
package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/health-controller/internal/reconciler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

func main() {
	cfg := reconciler.DefaultConfig()
	cfg.AddFlags(flag.CommandLine)
	os.Exit(manager.MainWithFlags("health-controller", flag.CommandLine, os.Args[1:], func(m *manager.Manager) error {
		_, err := reconciler.Setup(m, cfg)
		return err
	}))
}
