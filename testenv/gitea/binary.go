package gitea

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// giteaVersion must match GITEA_VERSION in hack/tools/gitea/build.sh, which names the cache folder.
const giteaVersion = "v1.26.0"

// defaultBinDir is the cache folder build.sh fills, computed the same way the script does.
func defaultBinDir() (string, error) {
	if dir := os.Getenv("SLUICE_TESTBIN_GITEA"); dir != "" {
		return dir, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home := os.Getenv("HOME")
		if home == "" {
			return "", errors.New("cannot find the gitea cache folder: neither SLUICE_TESTBIN_GITEA, XDG_CACHE_HOME nor HOME is set")
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "sluice", "testbin", "gitea-"+giteaVersion), nil
}

// installed reports whether dir holds a gitea binary and the assets it reads from disk.
func installed(dir string) bool {
	bin, err := os.Stat(filepath.Join(dir, "gitea"))
	if err != nil || !bin.Mode().IsRegular() || bin.Mode().Perm()&0o111 == 0 {
		return false
	}
	locale, err := os.Stat(filepath.Join(dir, "static", "options", "locale"))
	return err == nil && locale.IsDir()
}

// ensureBinDir returns a folder holding the gitea binary and its static/ assets. An explicit folder
// must already be filled; the default cache folder is built on first use, which takes minutes.
func ensureBinDir(ctx context.Context, explicit string) (string, error) {
	if explicit != "" {
		if !installed(explicit) {
			return "", fmt.Errorf("%s holds no gitea binary and static/options/locale: run SLUICE_TESTBIN_GITEA=%s hack/tools/gitea/build.sh", explicit, explicit)
		}
		return explicit, nil
	}
	dir, err := defaultBinDir()
	if err != nil {
		return "", err
	}
	if installed(dir) {
		return dir, nil
	}
	return build(ctx)
}

// build runs hack/tools/gitea/build.sh, which takes a lock so parallel test packages build once.
func build(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "tools", "gitea", "build.sh")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building gitea with %s: %w\n%s", script, err, tail(stderr.String(), tailLines))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if !installed(dir) {
		return "", fmt.Errorf("%s finished but %q holds no gitea binary and static/options/locale", script, dir)
	}
	return dir, nil
}

// repoRoot finds the folder holding go.work, starting from this source file and then from the
// working directory (the source path is not usable when built with -trimpath).
func repoRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("cannot find the sluice repository (a folder with go.work) above %s to run hack/tools/gitea/build.sh; set SLUICE_TESTBIN_GITEA to a folder it filled", strings.Join(starts, " or "))
}

// linkTree mirrors src into dst with hard links, copying where linking is impossible
// (another file system). Links keep the source's mode, so readable files stay readable.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case entry.IsDir():
			return os.MkdirAll(target, 0o755)
		case entry.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			return linkOrCopy(path, target)
		}
	})
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
