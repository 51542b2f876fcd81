package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Builder runs the go command for one spec group: the specs that share a folder and workspace mode.
type Builder struct {
	Root  string
	Stamp Stamp
}

// env is the go command's environment for spec on p: static, and with the workspace chosen
// explicitly, because this tool itself runs with GOWORK=off.
func (b Builder) env(spec Spec, p Platform) []string {
	gowork := "off"
	if spec.Workspace {
		gowork = filepath.Join(b.Root, "go.work")
	}
	return append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOAMD64=v1", "GOARM64=v8.0", "GOWORK="+gowork)
}

func (b Builder) ldflags(spec Spec) string {
	return fmt.Sprintf("-s -w -X %s=%s -X %s=%s", spec.VersionVar, b.Stamp.Version, spec.RevisionVar, b.Stamp.Revision)
}

// buildFlags are the flags every image binary is built with. -s -w drop the symbol table and
// DWARF (a third of the size); stack traces keep their function names and lines.
func (b Builder) buildFlags(spec Spec) []string {
	return []string{"-trimpath", "-buildvcs=false", "-ldflags=" + b.ldflags(spec)}
}

// goPackage is the part of `go list -json` output the cache key needs.
type goPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Module     *struct {
		Path, Version string
		Replace       *struct{ Path, Version string }
	}
	GoFiles, CgoFiles, SFiles, HFiles, CFiles, SysoFiles, EmbedFiles []string
	Deps                                                             []string
}

// Keys returns, for each spec, a digest of everything its binary for p is built from: the Go
// version, the flags, the content of every source file from this repository it compiles or
// embeds, and the module version of every other dependency. Equal keys mean equal binaries.
func (b Builder) Keys(ctx context.Context, specs []Spec, p Platform) (map[string]string, error) {
	if specs[0].Binary != "" {
		return prebuiltKeys(specs, p)
	}
	goVersion, err := b.goOutput(ctx, specs[0], p, "env", "GOVERSION", "GOFLAGS", "GOEXPERIMENT")
	if err != nil {
		return nil, err
	}
	args := []string{"list", "-deps", "-json=ImportPath,Dir,Standard,Module,GoFiles,CgoFiles,SFiles,HFiles,CFiles,SysoFiles,EmbedFiles,Deps"}
	for _, s := range specs {
		args = append(args, s.Package)
	}
	out, err := b.goOutput(ctx, specs[0], p, args...)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]*goPackage{}
	var all []*goPackage
	for dec := json.NewDecoder(strings.NewReader(out)); ; {
		var pkg goPackage
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("read go list output: %w", err)
		}
		pkgs[pkg.ImportPath] = &pkg
		all = append(all, &pkg)
	}
	keys := map[string]string{}
	for _, spec := range specs {
		root, err := rootPackage(all, filepath.Join(b.Root, spec.Dir, spec.Package))
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		fmt.Fprintf(h, "%s\n%s\n%q\n", goVersion, p, b.buildFlags(spec))
		for _, path := range append([]string{root.ImportPath}, root.Deps...) {
			if err := hashPackage(h, b.Root, pkgs[path]); err != nil {
				return nil, err
			}
		}
		keys[spec.Name] = hex.EncodeToString(h.Sum(nil))
	}
	return keys, nil
}

func rootPackage(pkgs []*goPackage, dir string) (*goPackage, error) {
	for _, p := range pkgs {
		if p.Dir == dir {
			return p, nil
		}
	}
	return nil, fmt.Errorf("go list did not report the package in %s", dir)
}

// hashPackage adds one package to a key: nothing for the standard library (the Go version covers
// it), the module version for a module from the module cache (its content is fixed by go.sum),
// and the content of every file for a package of this repository.
func hashPackage(w io.Writer, root string, p *goPackage) error {
	if p == nil || p.Standard {
		return nil
	}
	fmt.Fprintf(w, "package %s\n", p.ImportPath)
	if m := p.Module; m != nil && m.Version != "" && (m.Replace == nil || m.Replace.Version != "") {
		fmt.Fprintf(w, "module %s@%s", m.Path, m.Version)
		if m.Replace != nil {
			fmt.Fprintf(w, " => %s@%s", m.Replace.Path, m.Replace.Version)
		}
		fmt.Fprintln(w)
		return nil
	}
	files := slices.Concat(p.GoFiles, p.CgoFiles, p.SFiles, p.HFiles, p.CFiles, p.SysoFiles, p.EmbedFiles)
	slices.Sort(files)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(w, "file %s %x\n", f, sum)
	}
	return nil
}

// Build builds the binaries of specs for p into dir, named after each spec. Specs in one call
// must share Dir, Workspace and version variables; the go command builds them in parallel.
func (b Builder) Build(ctx context.Context, specs []Spec, p Platform, dir string) error {
	if specs[0].Binary != "" {
		return placePrebuilt(specs, p, dir)
	}
	args := append([]string{"build"}, b.buildFlags(specs[0])...)
	args = append(args, "-o", dir+string(filepath.Separator))
	for _, s := range specs {
		args = append(args, s.Package)
	}
	_, err := b.goOutput(ctx, specs[0], p, args...)
	return err
}

func (b Builder) goOutput(ctx context.Context, spec Spec, p Platform, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Join(b.Root, spec.Dir)
	cmd.Env = b.env(spec, p)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s (in %s, %s): %w\n%s", strings.Join(args, " "), spec.Dir, p, err, stderr.String())
	}
	return stdout.String(), nil
}
