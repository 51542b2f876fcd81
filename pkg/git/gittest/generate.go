package gittest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// epoch is where test commit times start. Times only grow, one second per commit, so commits
// written by tests are ordered and never share a hash by accident.
var (
	epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ticks atomic.Int64
)

func nextTime() time.Time { return epoch.Add(time.Duration(ticks.Add(1)) * time.Second) }

// FakeDrySHA is a made-up dry commit SHA, the same for the same i.
func FakeDrySHA(i int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("dry-%d", i)))
	return hex.EncodeToString(sum[:])
}

// GenerateHistory writes n commits in a line on top of branch (or from nothing) into the bare
// repository at dir, and returns the new tip. Each commit changes a manifest and the
// hydrator.metadata file (naming a FakeDrySHA), as a hydrated environment branch grows. It
// writes the repository directly: do not call it while a push to the same repository runs. The objects are built in memory
// and stored as a single packfile, so twenty thousand commits take seconds, not the minutes that
// as many loose objects or worktree commits would.
func GenerateHistory(tb testing.TB, dir, branch string, n int) string {
	tb.Helper()
	fs := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	ref := plumbing.NewBranchReferenceName(branch)
	parent, err := currentValue(fs, ref)
	if err != nil {
		tb.Fatal(err)
	}

	mem := memory.NewStorage()
	hashes := make([]plumbing.Hash, 0, 5*n+2)
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := mem.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			tb.Fatal(err)
		}
		h, err := mem.SetEncodedObject(obj)
		if err != nil {
			tb.Fatal(err)
		}
		hashes = append(hashes, h)
		return h
	}
	blob := func(content string) plumbing.Hash {
		obj := mem.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, _ := obj.Writer()
		_, _ = w.Write([]byte(content))
		_ = w.Close()
		h, err := mem.SetEncodedObject(obj)
		if err != nil {
			tb.Fatal(err)
		}
		hashes = append(hashes, h)
		return h
	}

	readme := blob("# Hydrated manifests\n\nWritten by gittest.GenerateHistory.\n")
	service := blob("apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  ports:\n  - port: 80\n")
	// Numbering commits on the shared clock keeps every call's content new, so that history
	// generated in several calls never repeats a tree.
	first := ticks.Add(int64(n)) - int64(n) + 1
	start := epoch.Add(time.Duration(first) * time.Second)
	for i := 0; i < n; i++ {
		seq := int(first) + i
		deployment := blob(fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  annotations:\n    revision: %q\nspec:\n  replicas: %d\n", fmt.Sprint(seq), 1+seq%3))
		metadata := blob(fmt.Sprintf("{\"drySha\": %q, \"subject\": \"change %d\"}\n", FakeDrySHA(seq), seq))
		manifests := put(&object.Tree{Entries: []object.TreeEntry{
			{Name: "deployment.yaml", Mode: filemode.Regular, Hash: deployment},
			{Name: "service.yaml", Mode: filemode.Regular, Hash: service},
		}})
		root := put(&object.Tree{Entries: []object.TreeEntry{
			{Name: "README.md", Mode: filemode.Regular, Hash: readme},
			{Name: "hydrator.metadata", Mode: filemode.Regular, Hash: metadata},
			{Name: "manifests", Mode: filemode.Dir, Hash: manifests},
		}})
		sig := Signature(start.Add(time.Duration(i) * time.Second))
		c := &object.Commit{Author: sig, Committer: sig, Message: fmt.Sprintf("change %d\n", seq), TreeHash: root}
		if !parent.IsZero() {
			c.ParentHashes = []plumbing.Hash{parent}
		}
		parent = put(c)
	}

	if err := writePack(fs, mem, hashes); err != nil {
		tb.Fatalf("write generated history to %s: %v", dir, err)
	}
	if err := fs.SetReference(plumbing.NewHashReference(ref, parent)); err != nil {
		tb.Fatal(err)
	}
	return parent.String()
}

func writePack(fs *filesystem.Storage, from storer.EncodedObjectStorer, hashes []plumbing.Hash) error {
	w, err := fs.PackfileWriter()
	if err != nil {
		return err
	}
	// Without deltas the pack is larger but is written in one quick pass.
	if _, err := packfile.NewEncoder(w, from, false).Encode(hashes, 0); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}
