// Command images builds Sluice's container images with no Docker and no registry. Each image is
// one static binary (a controller, or pause) in one layer on an empty base, running as an
// unprivileged user, for linux/amd64 and linux/arm64. For every image it writes, into the output
// folder (bin/images by default):
//
//	<name>/                    OCI image layout of the multi-arch index   crane push, skopeo
//	<name>.oci.tar             the same layout as a tar                    ctr import, kind load image-archive
//	<name>-linux-<arch>.tar    docker-save tarball of one platform         docker load
//	images.json                names, digests and files of every image
//
// Images are cached by content: an image whose sources, dependencies, Go version and stamp did
// not change is not built again. Run it with `make images`; see docs/release.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	m, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	printSummary(os.Stdout, cfg, m, time.Since(start))
}

// Config is one run of the builder.
type Config struct {
	Root, Out       string
	Registry, Tag   string
	Source, License string
	Stamp           Stamp
	Platforms       []Platform
	// Set is the image set (SetRelease or SetE2E) and Specs its images; Only narrows them.
	Set   string
	Specs []Spec
	// FluxBin is the folder of Flux's prebuilt controllers, for SetE2E.
	FluxBin  string
	Only     []string
	Progress func(format string, args ...any)
}

func parseFlags(args []string) (Config, error) {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	root := fs.String("root", "", "Repository root. Default: the nearest folder above holding go.work.")
	out := fs.String("out", "", "Output folder. Default: <root>/bin/images.")
	registry := fs.String("registry", "ghcr.io/sluicehq", "Registry and namespace that name the images: <registry>/<name>:<tag>.")
	tag := fs.String("tag", "", "Image tag. Default: the version.")
	version := fs.String("version", "", "Version stamped into the binaries and labels. Default: from git describe (see GitStamp).")
	revision := fs.String("revision", "", "Commit stamped into the binaries and labels. Default: git rev-parse HEAD.")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "Comma-separated platforms of every image.")
	only := fs.String("only", "", "Comma-separated image names of the set to build. Default: all of the set; the release set is "+strings.Join(specNames(Specs), ", ")+".")
	source := fs.String("source", "https://github.com/sluicehq/sluice", "Value of the org.opencontainers.image.source label.")
	license := fs.String("license", "Apache-2.0", "SPDX expression of the org.opencontainers.image.licenses label.")
	set := fs.String("set", SetRelease, "Image set: "+SetRelease+" (what make images builds and docs/release.md publishes) or "+SetE2E+" (only make e2e runs it: Flux's controllers from --flux-bin and the suite's HTTP app).")
	fluxBin := fs.String("flux-bin", "", "Folder of the Flux controllers hack/tools/flux/build.sh built, for --set "+SetE2E+".")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	cfg := Config{Root: *root, Out: *out, Registry: *registry, Tag: *tag, Source: *source, License: *license, Set: *set, FluxBin: *fluxBin}
	if err := cfg.complete(*version, *revision, *platforms, *only); err != nil {
		return Config{}, err
	}
	cfg.Progress = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	return cfg, nil
}

// complete fills the defaults that need the repository, and checks the values.
func (c *Config) complete(version, revision, platforms, only string) error {
	var err error
	if c.Root == "" {
		if c.Root, err = findRoot(); err != nil {
			return err
		}
	}
	if c.Out == "" {
		c.Out = filepath.Join(c.Root, "bin", "images")
	}
	if c.Out, err = filepath.Abs(c.Out); err != nil {
		return err
	}
	if c.Stamp, err = GitStamp(c.Root); err != nil {
		return err
	}
	if version != "" {
		c.Stamp.Version = strings.TrimPrefix(version, "v")
	}
	if revision != "" {
		c.Stamp.Revision = revision
	}
	if c.Tag == "" {
		c.Tag = c.Stamp.Version
	}
	if !validTag(c.Tag) {
		return fmt.Errorf("%q is not a valid image tag: use letters, digits, '_', '.' and '-' (set --tag)", c.Tag)
	}
	for _, s := range strings.Split(platforms, ",") {
		p, err := ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		c.Platforms = append(c.Platforms, p)
	}
	if only != "" {
		c.Only = strings.Split(only, ",")
	}
	if c.Set == "" {
		c.Set = SetRelease
	}
	if c.Specs, err = specSet(c.Set, c.FluxBin); err != nil {
		return err
	}
	_, err = selectSpecs(c.Specs, c.Only)
	return err
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("cannot find the repository root (a folder with go.work): pass --root")
		}
	}
}

func specNames(all []Spec) []string {
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
	}
	return names
}

func selectSpecs(all []Spec, only []string) ([]Spec, error) {
	if len(only) == 0 {
		return all, nil
	}
	var specs []Spec
	for _, name := range only {
		found := false
		for _, s := range all {
			if s.Name == strings.TrimSpace(name) {
				specs, found = append(specs, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no image named %q: choose from %s", name, strings.Join(specNames(all), ", "))
		}
	}
	return specs, nil
}
