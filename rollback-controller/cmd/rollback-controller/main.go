// Command rollback-controller runs the Sluice rollback controller.
package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(manager.Main("rollback-controller", flag.CommandLine, os.Args[1:], setup))
}

// setup registers this controller's reconcilers.
func setup(m *manager.Manager) error {
	return nil
}
