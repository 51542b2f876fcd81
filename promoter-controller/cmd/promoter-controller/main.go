// Command promoter-controller runs the Sluice promoter controller.
package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

func main() {
	os.Exit(manager.Main("promoter-controller", flag.CommandLine, os.Args[1:], setup))
}

// setup registers this controller's reconcilers.
func setup(m *manager.Manager) error {
	return nil
}
