package git

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitCLI runs git in dir and returns its output.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// deltaHistory makes a repository whose files change a little in each commit, so that git stores
// most versions as deltas, in chains.
func deltaHistory(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitCLI(t, dir, "init", "--quiet", "-b", "main")
	var manifest strings.Builder
	for i := range 40 {
		fmt.Fprintf(&manifest, "replicas-%d: %d\nimage: shop:%d.0\n", i, i%3, i)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(manifest.String()), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("env-%d.yaml", i%5)), []byte(manifest.String()[:manifest.Len()/2]), 0o600))
		gitCLI(t, dir, "add", "-A")
		gitCLI(t, dir, "commit", "--quiet", "-m", fmt.Sprint("change ", i))
	}
	return dir
}

// packs made by the git CLI, each with the index git wrote for it: with OFS_DELTA (a repack)
// and with REF_DELTA (pack-objects without --delta-base-offset).
func gitMadePacks(t *testing.T) map[string]string {
	t.Helper()
	dir := deltaHistory(t)
	gitCLI(t, dir, "repack", "-a", "-d", "-f", "--quiet", "--depth=20", "--window=20")
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
	require.NoError(t, err)
	require.Len(t, packs, 1)
	refDir := t.TempDir()
	cmd := exec.Command("git", "pack-objects", "--all", "--revs", "--no-reuse-delta", "--quiet", filepath.Join(refDir, "ref"))
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	require.NoError(t, err)
	return map[string]string{
		"ofs-delta": packs[0],
		"ref-delta": filepath.Join(refDir, "ref-"+strings.TrimSpace(string(out))+".pack"),
	}
}

func TestIndexPackWritesTheIndexGitWrites(t *testing.T) {
	for name, pack := range gitMadePacks(t) {
		t.Run(name, func(t *testing.T) {
			entries, checksum, err := indexPack(pack)
			require.NoError(t, err)
			deltas := 0
			for _, b := range entries.base {
				if b != noBase {
					deltas++
				}
			}
			require.Greater(t, deltas, 20, "the pack stores versions as deltas")

			var got bytes.Buffer
			require.NoError(t, encodeIndex(&got, len(entries.hashes), func(i int) (plumbing.Hash, int64, uint32) {
				return entries.hashes[i], entries.offsets[i], entries.crcs[i]
			}, checksum))
			want, err := os.ReadFile(strings.TrimSuffix(pack, ".pack") + ".idx")
			require.NoError(t, err)
			assert.Equal(t, want, got.Bytes(), "byte for byte the index git wrote")
			assert.True(t, strings.HasSuffix(pack, "-"+checksum.String()+".pack"), "git names the pack by the checksum")
		})
	}
}

// An index with offsets past 2 GiB takes the 64-bit table; go-git's own encoder is the reference.
func TestEncodeIndexMatchesGoGitWithLargeOffsets(t *testing.T) {
	type entry struct {
		hash   plumbing.Hash
		offset int64
		crc    uint32
	}
	var entries []entry
	for i := range 300 {
		entries = append(entries, entry{
			hash:   plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint("object ", i))),
			offset: 12 + int64(i)*(16<<20), // past 2 GiB from the 128th on
			crc:    uint32(i * 7919),
		})
	}
	checksum := plumbing.ComputeHash(plumbing.BlobObject, []byte("pack"))

	w := new(idxfile.Writer)
	require.NoError(t, w.OnHeader(uint32(len(entries))))
	for _, e := range entries {
		w.Add(e.hash, uint64(e.offset), e.crc)
	}
	require.NoError(t, w.OnFooter(checksum))
	idx, err := w.Index()
	require.NoError(t, err)
	var want bytes.Buffer
	_, err = idxfile.NewEncoder(&want).Encode(idx)
	require.NoError(t, err)

	var got bytes.Buffer
	require.NoError(t, encodeIndex(&got, len(entries), func(i int) (plumbing.Hash, int64, uint32) {
		return entries[i].hash, entries[i].offset, entries[i].crc
	}, checksum))
	assert.Equal(t, want.Bytes(), got.Bytes())
}

// A damaged or cut pack is refused with an error, and nothing of it is left in the folder.
func TestStoreLargePackRefusesADamagedPackAndLeavesNothing(t *testing.T) {
	pack := gitMadePacks(t)["ofs-delta"]
	good, err := os.ReadFile(pack)
	require.NoError(t, err)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	overCounted := bytes.Clone(good)
	binary.BigEndian.PutUint32(overCounted[8:], 0xffffffff)
	for name, data := range map[string][]byte{
		"a flipped byte":               flipped,
		"cut short":                    good[:len(good)-100],
		"no checksum":                  good[:len(good)-20],
		"a count of 4 billion objects": overCounted,
	} {
		t.Run(name, func(t *testing.T) {
			packDir := t.TempDir()
			err := storeLargePack(packDir, data[:packHeaderSize], bytes.NewReader(data[packHeaderSize:]))
			require.Error(t, err)
			left, err := os.ReadDir(packDir)
			require.NoError(t, err)
			assert.Empty(t, left, "nothing of the pack is left")
		})
	}

	packDir := t.TempDir()
	require.NoError(t, storeLargePack(packDir, good[:packHeaderSize], bytes.NewReader(good[packHeaderSize:])))
	name := strings.TrimSuffix(filepath.Base(pack), ".pack")
	for _, ext := range []string{".pack", ".idx"} {
		want, err := os.ReadFile(strings.TrimSuffix(pack, ".pack") + ext)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(packDir, name+ext))
		require.NoError(t, err)
		assert.Equal(t, want, got, "the %s in place", ext)
	}
}
