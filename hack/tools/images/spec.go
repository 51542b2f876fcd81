package main

import (
	"fmt"
	"path/filepath"
	"time"
)

// Spec is one image: a single static binary on an empty base.
type Spec struct {
	// Name names the image, its binary and its entrypoint (/<Name>).
	Name        string
	Description string
	// Dir is the folder, relative to the repository root, where `go build` runs.
	Dir string
	// Package is the main package, relative to Dir.
	Package string
	// Workspace builds with the repository's go.work, as `make build` and the tests do; otherwise
	// the module in Dir is built alone.
	Workspace bool
	// VersionVar and RevisionVar are the variables -ldflags -X stamps with the version and commit.
	VersionVar, RevisionVar string
	// Binary, when set, is a static binary built elsewhere, put in the image as it is instead of
	// one built from Package: Flux's controllers, which hack/tools/flux/build.sh builds from their
	// pinned modules. Its platform is read from its ELF header.
	Binary string
	// Version and Source, when set, replace the stamp (see stampOf) and the source label: the
	// upstream release a prebuilt Binary is, and where its source lives.
	Version, Source string
}

const versionPkg = "github.com/sluicehq/sluice/pkg/version"

func controller(name, description string) Spec {
	return Spec{
		Name:        name,
		Description: description,
		Dir:         ".",
		Package:     fmt.Sprintf("./%s/cmd/%s", name, name),
		Workspace:   true,
		VersionVar:  versionPkg + ".Version",
		RevisionVar: versionPkg + ".Revision",
	}
}

// Specs are every image `make images` builds, in a fixed order: the release set.
var Specs = []Spec{
	controller("gate-controller", "Sluice gates: freeze or approve delivery, by hand or on time windows, holding Flux and Sluice objects while closed."),
	controller("health-controller", "Sluice health: the health of any resources from CEL expressions and kstatus, published as commit statuses."),
	controller("promoter-controller", "Sluice promoter: promotes hydrated manifests from environment branch to environment branch through pull requests."),
	controller("commitstatus-controller", "Sluice commit statuses: mirrors CommitStatus objects to GitHub, GitLab, Gitea and Forgejo."),
	controller("rollback-controller", "Sluice rollback: reverts an environment to its last healthy commit."),
	{
		Name:        "sluice-ui",
		Description: "Sluice web UI: every pipeline, gate, health check and rollback on live pages; actions under the user's own Kubernetes identity.",
		Dir:         ".",
		Package:     "./ui/cmd/sluice-ui",
		Workspace:   true,
		VersionVar:  versionPkg + ".Version",
		RevisionVar: versionPkg + ".Revision",
	},
	{
		Name:        "pause",
		Description: "Pod sandbox (pause) container: holds a pod's namespaces and reaps orphaned processes.",
		Dir:         "hack/tools/images",
		Package:     "./pause",
		VersionVar:  "main.version",
		RevisionVar: "main.revision",
	},
}

// fluxVersion is the release of Flux's controllers that hack/tools/flux/build.sh builds
// (FLUX_VERSION there), without its "v".
const fluxVersion = "1.9.6"

// Image sets: --set chooses one.
const (
	// SetRelease is what `make images` builds and docs/release.md publishes.
	SetRelease = "release"
	// SetE2E is what only `make e2e` runs beside the release set, never published: Flux's
	// source-controller and kustomize-controller from the binaries in fluxBin, and the suite's
	// HTTP app.
	SetE2E = "e2e"
)

// e2eSpecs are the images of SetE2E, with Flux's binaries taken from the folder fluxBin.
func e2eSpecs(fluxBin string) []Spec {
	flux := func(name, description string) Spec {
		return Spec{Name: name, Description: description, Binary: filepath.Join(fluxBin, name),
			Version: fluxVersion, Source: "https://github.com/fluxcd/" + name}
	}
	return []Spec{
		flux("source-controller", "Flux source-controller v"+fluxVersion+", built from its Go module for make e2e."),
		flux("kustomize-controller", "Flux kustomize-controller v"+fluxVersion+", built from its Go module for make e2e."),
		{
			Name:        "e2e-web",
			Description: "The end-to-end suite's HTTP app: serves its --version; a version ending in -bad fails readiness.",
			Dir:         ".",
			Package:     "./e2e/cmd/e2e-web",
			Workspace:   true,
			VersionVar:  "main.buildVersion",
			RevisionVar: "main.buildRevision",
		},
	}
}

// stampOf is the stamp and tag of spec's image: the checkout's, or, for an upstream release
// (spec.Version set), that release, with no commit of ours and the Unix epoch as its time, so
// the image stays the same from one commit of Sluice to the next and is never built again.
func (c Config) stampOf(spec Spec) (Stamp, string) {
	if spec.Version == "" {
		return c.Stamp, c.Tag
	}
	return Stamp{Version: spec.Version, Created: time.Unix(0, 0).UTC()}, spec.Version
}

// specSet returns the images of the named set.
func specSet(set, fluxBin string) ([]Spec, error) {
	switch set {
	case SetRelease:
		return Specs, nil
	case SetE2E:
		if fluxBin == "" {
			return nil, fmt.Errorf("the %s set needs --flux-bin, the folder hack/tools/flux/build.sh prints", SetE2E)
		}
		return e2eSpecs(fluxBin), nil
	}
	return nil, fmt.Errorf("no image set %q: use %s or %s", set, SetRelease, SetE2E)
}

// Platform is an image platform in OCI terms.
type Platform struct{ OS, Arch, Variant string }

func (p Platform) String() string {
	if p.Variant != "" {
		return p.OS + "/" + p.Arch + "/" + p.Variant
	}
	return p.OS + "/" + p.Arch
}

// ParsePlatform reads "linux/amd64" or "linux/arm64". arm64 gets the variant v8, as the official
// multi-arch images carry it.
func ParsePlatform(s string) (Platform, error) {
	switch s {
	case "linux/amd64":
		return Platform{OS: "linux", Arch: "amd64"}, nil
	case "linux/arm64", "linux/arm64/v8":
		return Platform{OS: "linux", Arch: "arm64", Variant: "v8"}, nil
	}
	return Platform{}, fmt.Errorf("platform %q is not supported: use linux/amd64 or linux/arm64", s)
}

// slug is the platform as a file name part: linux-amd64.
func (p Platform) slug() string { return p.OS + "-" + p.Arch }
