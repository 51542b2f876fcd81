// Command kubectl-sluice is the kubectl plugin `kubectl sluice`. `kubectl sluice ui` runs the
// Sluice web UI on this machine with your kubeconfig (local mode: every action is yours, as with
// kubectl) and opens it in your browser.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/ui/internal/plugin"

	// CA roots inside the binary, as in sluice-ui.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := plugin.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
