package git

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// repackResult is what a repack did.
type repackResult struct {
	// objects is how many objects the new pack holds.
	objects int
	// changedPacks is set once the pack folder changed: the storage must be opened again.
	changedPacks bool
	// keptPacks is how many large packs a roll-up left as they are; 0 for a full repack.
	keptPacks int
}

// repack writes every object a ref reaches into one new pack, then removes the packs and loose
// objects it replaces; or, when the repository holds large packs (m.LargePackObjects), it rolls
// only the smaller packs and the loose objects into one, and keeps the large ones as they are.
// Call it with the repository's lock held.
//
// go-git has Repository.RepackObjects, but it is not safe to kill: it deletes the loose objects
// it packed before the new pack is in place, writes the index under its final name without
// fsync, and re-encodes every object through memory. This one copies each packed object's
// compressed bytes as they are (deltas included), so memory follows the number of objects, not
// their size, and it changes the folder in an order where a kill at any point leaves a readable
// repository:
//
//  1. the pack and its index are written under temporary names (tmp_pack_*, tmp_idx_*) and
//     synced; removeLeftovers deletes what a kill leaves of them;
//  2. the index is renamed into place, then the pack, then the folder is synced: an index
//     without its pack is ignored by go-git and removed by removeLeftovers;
//  3. only then are the old packs removed, each pack before its index, and the loose objects
//     the new pack holds. Until then every object is in the new pack, the old ones, or both.
//
// A full repack drops objects no ref reaches from packs; loose ones are kept for
// m.KeepUnreachable (a commit Merge wrote and a caller may still push), as git gc keeps them.
func repack(dir string, m Maintenance, hook func(string) error) (res repackResult, err error) {
	packDir := filepath.Join(dir, "objects", "pack")
	kept, rolled, err := splitLargePacks(dir, packDir, m.LargePackObjects)
	if err != nil {
		return res, err
	}
	var w *repackWrite
	if len(kept) > 0 {
		w, err = writeRollUp(dir, packDir, rolled)
		if err != nil {
			kept = nil
		}
	}
	if len(kept) == 0 {
		w, err = writeReachable(dir, packDir)
	}
	if err != nil || w == nil {
		return res, err
	}
	defer func() {
		// Left when a step below failed before the rename; a kill leaves them to removeLeftovers.
		_ = os.Remove(w.written.tempPack)
		_ = os.Remove(w.written.tempIndex)
	}()
	res.objects, res.keptPacks = len(w.plan.objects), len(kept)
	if err := runStep(hook, stepTempWritten); err != nil {
		return res, err
	}
	if res.changedPacks, err = putInPlace(packDir, w.written, hook); err != nil {
		return res, err
	}
	if err := removeOldPacks(packDir, w.oldPacks, w.written.checksum, hook); err != nil {
		return res, err
	}
	if err := removePackedLoose(w.loose, w.plan.index, m.KeepUnreachable, hook); err != nil {
		return res, err
	}
	removeEmptyFanout(filepath.Join(dir, "objects"))
	return res, nil
}

// repackWrite is step 1 of a repack done: the new pack under its temporary names, and what it
// replaces.
type repackWrite struct {
	plan    *packPlan
	written writtenPack
	// oldPacks are the packs the repository held; one may be the new pack itself, when nothing
	// changed since the last repack.
	oldPacks []plumbing.Hash
	// loose are the loose objects the repository held, by hash, and their paths.
	loose map[plumbing.Hash]string
}

// writeReachable writes every object a ref reaches into a new pack under temporary names, and
// returns it with what it replaces; or nil when no ref is left.
func writeReachable(dir, packDir string) (*repackWrite, error) {
	// A storage of its own that keeps every pack open: go-git otherwise opens a pack, and
	// allocates its buffers, for each object it reads, and the walk reads every commit and tree.
	// Its object cache is its own too: the walk reads every object once, and would only push
	// every other repository's objects out of the shared one.
	sto := repackStorage(dir)
	defer sto.Close()
	reachable, err := reachableObjects(sto)
	if err != nil || len(reachable) == 0 {
		// With no ref left there is nothing to keep; the folder is left as it is rather than
		// emptied.
		return nil, err
	}
	w := &repackWrite{loose: map[plumbing.Hash]string{}}
	err = forEachLooseObject(dir, func(h plumbing.Hash, path string) error {
		w.loose[h] = path
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list loose objects: %w", err)
	}
	packs, err := openPacks(packDir)
	if err != nil {
		return nil, err
	}
	defer closePacks(packs)
	for _, p := range packs {
		w.oldPacks = append(w.oldPacks, p.hash)
	}
	if w.plan, err = planPack(reachable, packs, w.loose); err != nil {
		return nil, err
	}
	if w.written, err = writePack(packDir, w.plan, packs, w.loose, sto); err != nil {
		return nil, err
	}
	return w, nil
}

// repackStorage is a storage of dir for a repack alone.
func repackStorage(dir string) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRU(objectCacheSize),
		filesystem.Options{ExclusiveAccess: true, KeepDescriptors: true})
}

// putInPlace renames the new pack's index, then the pack, to their final names and syncs the
// folder (step 2). renamed is set once the folder changed, even when a later part failed.
func putInPlace(packDir string, written writtenPack, hook func(string) error) (renamed bool, err error) {
	name := filepath.Join(packDir, "pack-"+written.checksum.String())
	if err := os.Rename(written.tempIndex, name+".idx"); err != nil {
		return false, err
	}
	if err := runStep(hook, stepIndexInPlace); err != nil {
		return true, err
	}
	if err := os.Rename(written.tempPack, name+".pack"); err != nil {
		return true, err
	}
	if err := syncDir(packDir); err != nil {
		return true, err
	}
	return true, runStep(hook, stepPackInPlace)
}

// removeOldPacks removes the packs the new one replaces, each pack before its index (step 3).
func removeOldPacks(packDir string, oldPacks []plumbing.Hash, written plumbing.Hash, hook func(string) error) error {
	firstPack := true
	for _, h := range oldPacks {
		if h == written {
			continue
		}
		old := filepath.Join(packDir, "pack-"+h.String())
		if err := os.Remove(old + ".pack"); err != nil {
			return err
		}
		if firstPack {
			firstPack = false
			if err := runStep(hook, stepOldPackGone); err != nil {
				return err
			}
		}
		if err := os.Remove(old + ".idx"); err != nil {
			return err
		}
	}
	return nil
}

// removePackedLoose removes the loose objects the new pack holds (packed), and those no ref
// reaches that are older than keepUnreachable (step 3).
func removePackedLoose(loose map[plumbing.Hash]string, packed map[plumbing.Hash]int32, keepUnreachable time.Duration, hook func(string) error) error {
	expired := time.Now().Add(-keepUnreachable)
	first := true
	for h, path := range loose {
		if _, ok := packed[h]; !ok {
			fi, err := os.Lstat(path)
			if err != nil || fi.ModTime().After(expired) {
				continue
			}
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		if first {
			first = false
			if err := runStep(hook, stepLooseGone); err != nil {
				return err
			}
		}
	}
	return nil
}

// reachableObjects lists every object a ref reaches (branches, notes, anything under refs/):
// commits newest first, then the trees and blobs of each commit, which is the order git packs
// them in for reading recent history.
func reachableObjects(sto storage.Storer) ([]plumbing.Hash, error) {
	refs, err := sto.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("read refs: %w", err)
	}
	var tips []plumbing.Hash
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			tips = append(tips, ref.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read refs: %w", err)
	}

	seen := map[plumbing.Hash]bool{}
	var order, trees []plumbing.Hash
	stack := tips
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		obj, err := object.GetObject(sto, h)
		if err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		if obj.Type() == plumbing.TreeObject {
			// A ref straight to a tree: walked below with the others.
			trees = append(trees, h)
			continue
		}
		seen[h] = true
		order = append(order, h)
		switch o := obj.(type) {
		case *object.Commit:
			trees = append(trees, o.TreeHash)
			// Pushed last, walked first: the first parent's line comes out newest first.
			for i := len(o.ParentHashes) - 1; i >= 0; i-- {
				stack = append(stack, o.ParentHashes[i])
			}
		case *object.Tag:
			stack = append(stack, o.Target)
		}
	}
	for _, t := range trees {
		if err := walkTree(sto, t, seen, &order); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeEmptyFanout removes the loose object folders (objects/00 to objects/ff) left empty.
func removeEmptyFanout(objects string) {
	entries, err := os.ReadDir(objects)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && len(e.Name()) == 2 && isHex(e.Name()) {
			// Fails, harmlessly, on a folder that still holds objects.
			_ = os.Remove(filepath.Join(objects, e.Name()))
		}
	}
}
