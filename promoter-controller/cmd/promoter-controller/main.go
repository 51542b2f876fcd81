// Command promoter-controller runs the Sluice promoter controller.
package main

import (
	"flag"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/promoter"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	cfg := promoter.Config{}
	flag.StringVar(&cfg.CacheDir, "git-cache-dir", filepath.Join(os.TempDir(), "sluice-promoter-git"),
		"Folder of the git cache: one bare repository per remote, kept across restarts.")
	flag.StringVar(&cfg.WebhookAddress, "webhook-bind-address", "0",
		"Address of the webhook receiver (POST /hooks/<namespace>/<scmprovider>); 0 disables it.")
	os.Exit(manager.Main("promoter-controller", flag.CommandLine, os.Args[1:], func(m *manager.Manager) error {
		_, err := promoter.Setup(m, cfg)
		return err
	}))
}
