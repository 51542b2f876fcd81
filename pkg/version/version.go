// Package version tells which build a binary is. The image builder (hack/tools/images) and the
// release workflow stamp it with
//
//	-ldflags "-X github.com/sluicehq/sluice/pkg/version.Version=1.2.3 -X github.com/sluicehq/sluice/pkg/version.Revision=<commit>"
//
// A plain `go build` leaves Version at "devel" and fills Revision from the build's VCS stamp when
// there is one.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

var (
	// Version is the release, without a leading "v", or "devel".
	Version = "devel"
	// Revision is the git commit the binary was built from, or empty when unknown.
	Revision = ""
)

// Info is what a binary reports about its own build.
type Info struct {
	Version   string
	Revision  string
	GoVersion string
	Platform  string
}

// Get returns this binary's build information.
func Get() Info {
	info := Info{Version: Version, Revision: Revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info.Revision == "" {
		info.Revision = vcsRevision()
	}
	return info
}

// String is the line printed by --version: "<name> <version> (<revision>, <go>, <os/arch>)".
func (i Info) String() string {
	rev := i.Revision
	if rev == "" {
		rev = "unknown revision"
	}
	return fmt.Sprintf("%s (%s, %s, %s)", i.Version, rev, i.GoVersion, i.Platform)
}

func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
