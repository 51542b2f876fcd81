package main

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// prebuiltKeys keys each prebuilt binary by its content: equal keys mean equal binaries. It also
// checks that each one can go into an image for p.
func prebuiltKeys(specs []Spec, p Platform) (map[string]string, error) {
	keys := map[string]string{}
	for _, s := range specs {
		if err := checkPrebuilt(s, p); err != nil {
			return nil, err
		}
		f, err := os.Open(s.Binary)
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.Binary, err)
		}
		keys[s.Name] = "prebuilt " + hex.EncodeToString(h.Sum(nil))
	}
	return keys, nil
}

// placePrebuilt links each prebuilt binary into dir under its image's name, where the layer
// writer reads the binaries the go command builds.
func placePrebuilt(specs []Spec, p Platform, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range specs {
		if err := checkPrebuilt(s, p); err != nil {
			return err
		}
		abs, err := filepath.Abs(s.Binary)
		if err != nil {
			return err
		}
		if err := os.Symlink(abs, filepath.Join(dir, s.Name)); err != nil {
			return err
		}
	}
	return nil
}

// checkPrebuilt refuses a binary that would not run in an image of p on an empty base: one for
// another OS or architecture, or one that needs a dynamic loader.
func checkPrebuilt(s Spec, p Platform) error {
	f, err := elf.Open(s.Binary)
	if err != nil {
		return fmt.Errorf("%s: %s is not a Linux executable (%w); build it first (hack/tools/flux/build.sh builds Flux's)", s.Name, s.Binary, err)
	}
	defer f.Close()
	arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	if p.OS != "linux" || arch != p.Arch {
		return fmt.Errorf("%s: %s is built for %s, not %s: build the image for the binary's platform only (--platforms linux/%s)", s.Name, s.Binary, f.Machine, p, arch)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s: %s is dynamically linked, and an image on an empty base has no loader: build it with CGO_ENABLED=0", s.Name, s.Binary)
		}
	}
	return nil
}
