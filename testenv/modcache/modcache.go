// Package modcache keeps files taken from Go modules (the Flux and Argo CD CRDs) in a cache folder
// shared by every clone and test process on a machine. Modules are downloaded with the go command
// into the module cache and never built or added to a go.mod; a file lock keeps parallel test
// packages from racing, and a folder is complete only once it carries its marker.
package modcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Dir is the cache folder for one set of files: $envVar when set, else name under the user's
// cache directory (sluice/<name>).
func Dir(envVar, name string) (string, error) {
	if dir := os.Getenv(envVar); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for %s; set %s: %w", name, envVar, err)
	}
	return filepath.Join(base, "sluice", name), nil
}

// Ensure makes dir complete, calling fill on an empty temporary sibling the first time on a
// machine; later calls, from any process, find it complete and return at once.
func Ensure(dir string, fill func(tmp string) error) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	unlock, err := lock(dir + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return nil
	}
	return populate(dir, fill)
}

// lock takes an exclusive lock on path, waiting for other processes that hold it.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// populate fills dir through a temporary sibling renamed at the end, so an interrupted run
// leaves nothing that looks complete.
func populate(dir string, fill func(tmp string) error) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// MkdirTemp makes the folder private; the cache is shared like the module cache.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// Download fetches module@version into the module cache and returns its folder. It runs in an
// empty folder outside any workspace, so no go.mod or go.work of the repository changes, and the
// module's own go version does not matter: it is not built.
func Download(module, version string) (string, error) {
	scratch, err := os.MkdirTemp("", "sluice-module-download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	out, err := Go(scratch, "-mod=mod", "mod", "download", "-json", module+"@"+version)
	var info struct {
		Dir   string
		Error string
	}
	if jsonErr := json.Unmarshal(out, &info); jsonErr != nil && err == nil {
		err = jsonErr
	}
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	case err != nil:
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	case info.Dir == "":
		return "", fmt.Errorf("go mod download %s@%s reported no folder", module, version)
	}
	return info.Dir, nil
}

// Go runs the go command in dir, away from the repository's workspace, with modFlag (such as
// -mod=readonly) added to GOFLAGS when it is not empty.
func Go(dir, modFlag string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = Env(modFlag)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Env is the environment of a go command kept away from the repository's workspace and modules.
func Env(modFlag string) []string {
	env := append(os.Environ(), "GOWORK=off")
	if modFlag != "" {
		env = append(env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" "+modFlag))
	}
	return env
}

// CopyFile copies one file out of the module cache. Module cache files are read-only; the copy
// is writable so the cache can be removed.
func CopyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
