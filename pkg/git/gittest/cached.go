package gittest

import (
	"os"
	"path/filepath"
	"testing"

	gogit "github.com/go-git/go-git/v5"
)

// CachedBare returns a bare repository that build fills, built once per machine and kept under
// $SLUICE_BENCH_CACHE (default ~/.cache/sluice/bench) as name: a 200,000-commit history takes
// minutes to generate, and benchmarks rerun. Callers copy it before writing to it. name must
// change whenever what build writes does. A build that fails leaves nothing behind.
func CachedBare(tb testing.TB, name string, build func(dir string)) string {
	tb.Helper()
	root := os.Getenv("SLUICE_BENCH_CACHE")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			tb.Fatal(err)
		}
		root = filepath.Join(home, ".cache", "sluice", "bench")
	}
	dir := filepath.Join(root, name+".git")
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return dir
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, name+".building-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "repo.git")
	if _, err := gogit.PlainInit(work, true); err != nil {
		tb.Fatal(err)
	}
	build(work)
	// Another run may have finished first: its copy is as good as this one.
	if err := os.Rename(work, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "HEAD")); statErr != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
