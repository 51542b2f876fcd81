// Command promoter-controller runs the Sluice promoter controller: PromotionStrategies promote
// hydrated manifests from environment branch to environment branch through PullRequests.
package main

import (
	"os"

	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(manager.Main("promoter-controller", setup.Setup))
}
