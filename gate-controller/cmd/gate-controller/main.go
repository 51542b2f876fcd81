// Command gate-controller runs the Sluice gate controller: Gates with time windows and
// overrides, holding the Flux and Sluice objects that reference them while they are closed.
package main

import (
	"os"

	"github.com/sluicehq/sluice/gate-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/runtime/manager"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(manager.Main("gate-controller", setup.Setup))
}
