package flux

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/sluicehq/sluice/testenv"
)

var (
	crdOnce  sync.Once
	crdPaths []string
	crdErr   error
)

// CRDPaths returns the Flux CRD files, ready for testenv.Options.CRDPaths or
// Env.InstallCRDPaths. The first call on a machine downloads the modules and generates the
// missing CRDs into a cache folder (a few seconds, plus about a minute to build controller-gen);
// later calls, from any process, reuse it. A file lock keeps parallel test packages from racing.
func CRDPaths() ([]string, error) {
	crdOnce.Do(func() { crdPaths, crdErr = cachedCRDs() })
	return crdPaths, crdErr
}

// CacheDir is where the CRDs of these module versions are kept: $SLUICE_FLUX_CRDS, or a folder
// under the user's cache directory shared by every clone on the machine.
func CacheDir() (string, error) {
	if dir := os.Getenv("SLUICE_FLUX_CRDS"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for the Flux CRDs; set SLUICE_FLUX_CRDS: %w", err)
	}
	var key []string
	for _, s := range sources {
		key = append(key, filepath.Base(strings.TrimSuffix(s.module, "/api"))+"-"+s.version)
	}
	return filepath.Join(base, "sluice", "flux-crds", strings.Join(key, "_")), nil
}

func cachedCRDs() ([]string, error) {
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
			return nil, err
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Flux CRDs in %s; remove the folder to fetch them again", dir)
	}
	sort.Strings(files)
	return files, nil
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
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// MkdirTemp makes the folder private; the cache is shared like the module cache.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for _, s := range sources {
		moduleDir, err := download(s.module, s.version)
		if err != nil {
			return err
		}
		if s.generate {
			err = generate(moduleDir, tmp)
		} else {
			err = copyCRDs(filepath.Join(moduleDir, "config", "crd", "bases"), tmp)
		}
		if err != nil {
			return fmt.Errorf("CRDs of %s@%s: %w", s.module, s.version, err)
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

// download fetches module@version into the module cache and returns its folder. It runs in an
// empty folder outside any workspace, so no go.mod or go.work of the repository changes.
func download(module, version string) (string, error) {
	scratch, err := os.MkdirTemp("", "sluice-flux-download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	out, err := goCommand(scratch, "-mod=mod", "mod", "download", "-json", module+"@"+version)
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

// generate runs controller-gen over the api types in moduleDir. The module ships its go.sum, so
// its packages load read-only from the module cache.
func generate(moduleDir, out string) error {
	bin, err := controllerGen()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "crd:crdVersions=v1", "paths=./...", "output:crd:artifacts:config="+out)
	cmd.Dir = moduleDir
	cmd.Env = goEnv("-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("controller-gen: %w\n%s", err, b)
	}
	return nil
}

// controllerGen builds controller-gen from the repository's codegen tools module (outside
// go.work) into the cache once, so the CRDs are generated by the same version as Sluice's own.
func controllerGen() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(filepath.Dir(dir), "bin", "controller-gen")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	tools := filepath.Join(root, "hack", "tools", "codegen")
	if _, err := goCommand(tools, "", "build", "-o", bin+".tmp", "sigs.k8s.io/controller-tools/cmd/controller-gen"); err != nil {
		return "", fmt.Errorf("build controller-gen in %s: %w", tools, err)
	}
	return bin, os.Rename(bin+".tmp", bin)
}

func goCommand(dir, modFlag string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = goEnv(modFlag)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// goEnv keeps the go command away from the repository's workspace and modules.
func goEnv(modFlag string) []string {
	env := append(os.Environ(), "GOWORK=off")
	if modFlag != "" {
		env = append(env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" "+modFlag))
	}
	return env
}

func copyCRDs(from, to string) error {
	files, err := filepath.Glob(filepath.Join(from, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD YAML in %s", from)
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, copyFile(f, filepath.Join(to, filepath.Base(f))))
	}
	return errors.Join(errs...)
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
