// Command sluice-ui serves the Sluice web UI: every pipeline, gate, health check and rollback
// on live pages, and the actions on them under the user's own Kubernetes identity.
//
// Local mode: sluice-ui --kubeconfig ~/.kube/config serves http://127.0.0.1:8092 as you.
package main

import (
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/ui/internal/setup"

	// CA roots inside the binary: the image holds nothing but it.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(manager.Main("sluice-ui", setup.Setup))
}
