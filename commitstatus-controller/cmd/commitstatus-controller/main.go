// Command commitstatus-controller runs the Sluice commitstatus controller: it mirrors each
// CommitStatus to its SCM (GitHub, GitLab, Gitea/Forgejo), calling the SCM only when the desired
// state changed, and keeps statuses of plain git repositories in the cluster.
package main

import (
	"os"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/runtime/manager"

	// CA roots inside the binary: the images hold nothing but it, so no /etc/ssl. Used only
	// when the system has no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	os.Exit(manager.Main("commitstatus-controller", setup.Setup))
}
