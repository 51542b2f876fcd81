// Command gate-controller runs the Sluice gate controller.
package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

func main() {
	os.Exit(manager.Main("gate-controller", flag.CommandLine, os.Args[1:], setup))
}

// setup registers this controller's reconcilers.
func setup(m *manager.Manager) error {
	return nil
}
