package modcache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The first Ensure fills the folder; later ones find it complete and do not fill again.
func TestEnsureFillsOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crds")
	fills := 0
	fill := func(tmp string) error {
		fills++
		return os.WriteFile(filepath.Join(tmp, "a.yaml"), []byte("kind: CustomResourceDefinition\n"), 0o644)
	}
	require.NoError(t, Ensure(dir, fill))
	require.NoError(t, Ensure(dir, fill))
	assert.Equal(t, 1, fills)
	b, err := os.ReadFile(filepath.Join(dir, "a.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "kind: CustomResourceDefinition\n", string(b))
}

// A fill that fails leaves nothing that looks complete, and the next Ensure fills again.
func TestEnsureLeavesNothingOfAFailedFill(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "crds")
	err := Ensure(dir, func(tmp string) error {
		_ = os.WriteFile(filepath.Join(tmp, "half.yaml"), nil, 0o644)
		return errors.New("network down")
	})
	require.ErrorContains(t, err, "network down")
	_, statErr := os.Stat(dir)
	assert.True(t, os.IsNotExist(statErr), "no folder is left")
	left, _ := filepath.Glob(filepath.Join(parent, "crds.tmp-*"))
	assert.Empty(t, left, "no temporary folder is left")

	require.NoError(t, Ensure(dir, func(tmp string) error { return nil }))
	_, statErr = os.Stat(filepath.Join(dir, ".complete"))
	assert.NoError(t, statErr)
}

func TestDirPrefersTheEnvironment(t *testing.T) {
	t.Setenv("SLUICE_TEST_CACHE", "/somewhere")
	dir, err := Dir("SLUICE_TEST_CACHE", "x")
	require.NoError(t, err)
	assert.Equal(t, "/somewhere", dir)
	t.Setenv("SLUICE_TEST_CACHE", "")
	dir, err = Dir("SLUICE_TEST_CACHE", "x")
	require.NoError(t, err)
	assert.Equal(t, "x", filepath.Base(dir))
}
