package git

import (
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/stretchr/testify/require"
)

// Packs written by other tools may store deltas as REF_DELTA (base named by hash) rather than
// OFS_DELTA; a repack copies them as deltas on the same base.
func TestRepackCopiesRefDeltas(t *testing.T) {
	dir := t.TempDir()
	_, err := gogit.Init(newStorage(dir, cache.NewObjectLRU(objectCacheSize)), nil)
	require.NoError(t, err)

	mem, tip, batches := refDeltaHistory(t)
	sto := newStorage(dir, cache.NewObjectLRU(objectCacheSize))
	for _, batch := range batches {
		w, err := sto.PackfileWriter()
		require.NoError(t, err)
		_, err = packfile.NewEncoder(w, mem, true).Encode(batch, 10)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	require.NoError(t, sto.SetReference(plumbing.NewHashReference("refs/remotes/origin/dev", tip)))
	require.NoError(t, sto.Close())
	packDir := filepath.Join(dir, "objects", "pack")
	require.Equal(t, map[plumbing.ObjectType]int{plumbing.REFDeltaObject: 4, plumbing.CommitObject: 6, plumbing.TreeObject: 6, plumbing.BlobObject: 2},
		storedTypes(t, packDir), "the packs hold REF_DELTA blobs")

	res, err := repack(dir, Maintenance{KeepUnreachable: time.Hour}.withDefaults(), nil)
	require.NoError(t, err)
	require.Equal(t, 18, res.objects)
	require.Equal(t, map[plumbing.ObjectType]int{plumbing.OFSDeltaObject: 4, plumbing.CommitObject: 6, plumbing.TreeObject: 6, plumbing.BlobObject: 2},
		storedTypes(t, packDir), "one pack, the same deltas")

	requireHistoryReads(t, dir, tip)
}

// refDeltaHistory writes six revisions of one file, in memory, as two batches of objects to pack
// apart: packed with deltas against objects of the other batch, the blobs are REF_DELTAs.
func refDeltaHistory(t *testing.T) (mem *memory.Storage, tip plumbing.Hash, batches [2][]plumbing.Hash) {
	t.Helper()
	mem = memory.NewStorage()
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := mem.NewEncodedObject()
		require.NoError(t, o.Encode(obj))
		h, err := mem.SetEncodedObject(obj)
		require.NoError(t, err)
		return h
	}
	for rev := range 6 {
		var content strings.Builder
		for i := range 300 {
			fmt.Fprintf(&content, "line %d %x\n", i, sha1.Sum([]byte(fmt.Sprint(i))))
		}
		fmt.Fprintf(&content, "revision %d\n", rev)
		blob := mem.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		w, _ := blob.Writer()
		_, _ = io.WriteString(w, content.String())
		_ = w.Close()
		b, err := mem.SetEncodedObject(blob)
		require.NoError(t, err)
		tree := put(&object.Tree{Entries: []object.TreeEntry{{Name: "app.yaml", Mode: filemode.Regular, Hash: b}}})
		sig := object.Signature{Name: "t", Email: "t@example.invalid", When: time.Unix(int64(1e9+rev), 0)}
		c := &object.Commit{Author: sig, Committer: sig, Message: fmt.Sprintf("rev %d\n", rev), TreeHash: tree}
		if !tip.IsZero() {
			c.ParentHashes = []plumbing.Hash{tip}
		}
		tip = put(c)
		batches[rev/3] = append(batches[rev/3], b, tree, tip)
	}
	return mem, tip, batches
}

// requireHistoryReads reads every revision back from the repository in dir, newest first from
// tip, and has git fsck check it where git is installed.
func requireHistoryReads(t *testing.T, dir string, tip plumbing.Hash) {
	t.Helper()
	fresh := newStorage(dir, cache.NewObjectLRU(objectCacheSize))
	defer fresh.Close()
	head, err := object.GetCommit(fresh, tip)
	require.NoError(t, err)
	iter := object.NewCommitIterCTime(head, nil, nil)
	n := 0
	require.NoError(t, iter.ForEach(func(c *object.Commit) error {
		n++
		f, err := c.File("app.yaml")
		if err != nil {
			return err
		}
		content, err := f.Contents()
		if err == nil && !strings.HasSuffix(content, fmt.Sprintf("revision %d\n", 6-n)) {
			err = fmt.Errorf("commit %s reads %q", c.Hash, content[len(content)-20:])
		}
		return err
	}))
	require.Equal(t, 6, n)
	if gitBin, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command(gitBin, "--git-dir", dir, "fsck", "--full", "--strict", "--no-dangling", "--no-progress")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git fsck:\n%s", out)
	}
}

// storedTypes counts the objects of every pack in packDir by the type they are stored as.
func storedTypes(t *testing.T, packDir string) map[plumbing.ObjectType]int {
	t.Helper()
	packs, err := openPacks(packDir)
	require.NoError(t, err)
	defer closePacks(packs)
	types := map[plumbing.ObjectType]int{}
	for _, p := range packs {
		for _, e := range p.entries {
			h, err := readPackedHeader(p.file, int64(e.Offset))
			require.NoError(t, err)
			types[h.typ]++
		}
	}
	return types
}
