package git

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// packSize is a pack and the number of objects its header says it holds.
type packSize struct {
	hash    plumbing.Hash
	objects int
}

// splitLargePacks sorts the packs of packDir into those a repack keeps as they are (kept) and
// those it rolls into one (rolled). From the largest down, a pack is kept while it holds at least
// largePack objects and at least twice the objects of every smaller pack and loose object
// together; everything below the first that does not is rolled. With none kept, the repack is a
// full one. Only the packs' 12-byte headers are read: deciding costs nothing per object.
func splitLargePacks(dir, packDir string, largePack int) (kept, rolled []plumbing.Hash, err error) {
	sizes, err := packSizes(packDir)
	if err != nil {
		return nil, nil, err
	}
	counts, err := countObjects(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list loose objects: %w", err)
	}
	rest := counts.loose
	for _, p := range sizes {
		rest += p.objects
	}
	slices.SortFunc(sizes, func(a, b packSize) int { return cmp.Compare(b.objects, a.objects) })
	i := 0
	for ; i < len(sizes); i++ {
		rest -= sizes[i].objects
		if sizes[i].objects < largePack || sizes[i].objects < 2*rest {
			break
		}
	}
	if i == 0 || i == len(sizes) && rest == 0 {
		// Nothing large, or nothing but large packs: a full repack.
		return nil, nil, nil
	}
	for j, p := range sizes {
		if j < i {
			kept = append(kept, p.hash)
		} else {
			rolled = append(rolled, p.hash)
		}
	}
	return kept, rolled, nil
}

// packSizes reads the object count of every pack in packDir from its header.
func packSizes(packDir string) ([]packSize, error) {
	dir, err := os.ReadDir(packDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sizes []packSize
	for _, e := range dir {
		if !isPackName(e.Name()) {
			continue
		}
		n, err := packObjectCount(filepath.Join(packDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Name(), err)
		}
		h := plumbing.NewHash(strings.TrimSuffix(strings.TrimPrefix(e.Name(), "pack-"), ".pack"))
		sizes = append(sizes, packSize{hash: h, objects: n})
	}
	return sizes, nil
}

func packObjectCount(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return packHeaderObjects(f)
}

// writeRollUp writes every object of the rolled packs, and every loose object, into a new pack
// under temporary names, and returns it with what it replaces. Nothing is walked: objects no ref
// reaches stay until a full repack. A delta's base must be in the rolled packs or loose, as
// go-git reads no delta on a base in another pack; one that is not fails the roll-up, and
// repack does a full one instead.
func writeRollUp(dir, packDir string, rolled []plumbing.Hash) (*repackWrite, error) {
	// Read only for a delta whose chain of bases loops back to itself (fromStorage).
	sto := repackStorage(dir)
	defer sto.Close()
	w := &repackWrite{loose: map[plumbing.Hash]string{}, oldPacks: rolled}
	var want []plumbing.Hash
	err := forEachLooseObject(dir, func(h plumbing.Hash, path string) error {
		w.loose[h] = path
		want = append(want, h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list loose objects: %w", err)
	}
	var packs []*sourcePack
	defer func() { closePacks(packs) }()
	for _, h := range rolled {
		p, err := openPack(filepath.Join(packDir, "pack-"+h.String()), h)
		if err != nil {
			return nil, fmt.Errorf("read pack-%s: %w", h, err)
		}
		packs = append(packs, p)
		for _, e := range p.entries {
			want = append(want, e.Hash)
		}
	}
	if w.plan, err = planPack(want, packs, w.loose); err != nil {
		return nil, err
	}
	if w.written, err = writePack(packDir, w.plan, packs, w.loose, sto); err != nil {
		return nil, err
	}
	return w, nil
}
