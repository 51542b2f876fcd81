package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// Binaries returns the folder holding kube-apiserver, etcd, kubectl and helm, building them with
// hack/testbin.sh on first use. The script locks the folder, so parallel test packages build once.
func Binaries() (string, error) {
	binOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(root, "hack", "testbin.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			binErr = fmt.Errorf("build the local control plane with hack/testbin.sh: %w\n%s", err, stderr.String())
			return
		}
		binDir = strings.TrimSpace(string(out))
	})
	return binDir, binErr
}

// Tool returns the path of a binary in the testbin folder, such as "kubectl" or "helm".
func Tool(name string) (string, error) {
	dir, err := Binaries()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// RepoRoot finds the monorepo root (the folder with go.work), from $SLUICE_ROOT, the working
// directory, or this source file.
func RepoRoot() (string, error) {
	if root := os.Getenv("SLUICE_ROOT"); root != "" {
		return root, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("cannot find the Sluice repository root (a folder with go.work); set SLUICE_ROOT")
}
