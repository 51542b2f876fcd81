package main

import "fmt"

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

// Specs are every image `make images` builds, in a fixed order.
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
