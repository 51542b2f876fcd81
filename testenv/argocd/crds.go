// Package argocd provides the real Argo CD CRDs to tests and README examples. They come from the
// Argo CD Go module, never from copies committed here: the module's zip carries
// manifests/crds, and only those files are used; the module is not built.
package argocd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Module and Version are where the CRDs come from. Version is the newest release this machine's
// module proxy serves that has spec.syncPolicy.automated.enabled (Argo CD 3.1 and later).
const (
	Module  = "github.com/argoproj/argo-cd/v3"
	Version = "v3.2.0"
)

// Resources of the Argo CD kinds tests use, at their storage versions.
var (
	Applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjects  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

// files are the CRDs taken from the module's manifests/crds; ApplicationSets are left out, as
// nothing here uses them and their CRD alone is a megabyte.
var files = []string{"application-crd.yaml", "appproject-crd.yaml"}

var (
	once  sync.Once
	paths []string
	err   error
)

// CRDPaths returns the Application and AppProject CRD files, ready for testenv.Options.CRDPaths.
// The first call on a machine downloads the module into the module cache and copies the files
// into a cache folder; later calls, from any process, reuse it. A file lock keeps parallel test
// packages from racing.
func CRDPaths() ([]string, error) {
	once.Do(func() { paths, err = cached() })
	return paths, err
}

// CacheDir is where the CRDs of Version are kept: $SLUICE_ARGOCD_CRDS, or a folder under the
// user's cache directory shared by every clone on the machine.
func CacheDir() (string, error) {
	if dir := os.Getenv("SLUICE_ARGOCD_CRDS"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the Argo CD CRDs; set SLUICE_ARGOCD_CRDS: %w", err)
	}
	return filepath.Join(base, "sluice", "argocd-crds", "argo-cd-"+Version), nil
}

func cached() ([]string, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	unlock, err := lock(dir + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		if err := populate(dir); err != nil {
			return nil, fmt.Errorf("Argo CD CRDs of %s@%s: %w", Module, Version, err)
		}
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(dir, f)
	}
	return out, nil
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
func populate(dir string) error {
	moduleDir, err := download()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := copyFile(filepath.Join(moduleDir, "manifests", "crds", f), filepath.Join(tmp, f)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// download fetches the module into the module cache and returns its folder. It runs in an empty
// folder outside any workspace, so no go.mod or go.work of the repository changes, and the
// module's own go version does not matter: it is never built.
func download() (string, error) {
	scratch, err := os.MkdirTemp("", "sluice-argocd-download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	cmd := exec.Command("go", "mod", "download", "-json", Module+"@"+Version)
	cmd.Dir = scratch
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var info struct {
		Dir   string
		Error string
	}
	jsonErr := json.Unmarshal(out, &info)
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download: %s", info.Error)
	case runErr != nil:
		return "", fmt.Errorf("go mod download: %w: %s", runErr, strings.TrimSpace(stderr.String()))
	case jsonErr != nil:
		return "", fmt.Errorf("go mod download: %w", jsonErr)
	case info.Dir == "":
		return "", fmt.Errorf("go mod download reported no folder")
	}
	return info.Dir, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	// Module cache files are read-only; the copy is writable so the cache can be removed.
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
