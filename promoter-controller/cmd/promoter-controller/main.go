// Command promoter-controller runs the Sluice promoter controller: PromotionStrategies promote
// hydrated manifests from environment branch to environment branch through PullRequests.
package main

import (
	"flag"
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	var cfg setup.Config
	cfg.AddFlags(flag.CommandLine)
	os.Exit(manager.Main("promoter-controller", flag.CommandLine, os.Args[1:], func(m *manager.Manager) error {
		if err := cfg.Validate(); err != nil {
			return err
		}
		return setup.Setup(m, cfg)
	}))
}
