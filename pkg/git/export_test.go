package git

import (
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// WithMaintenanceStep calls step at each step of a repack, named as in MaintenanceSteps; an error
// it returns fails the repack at that step.
func WithMaintenanceStep(step func(name string) error) CacheOption {
	return func(c *Cache) { c.maintenanceStep = step }
}

// MaintenanceSteps are the steps of a repack, in order.
var MaintenanceSteps = []string{stepTempWritten, stepIndexInPlace, stepPackInPlace, stepOldPackGone, stepLooseGone}

// WithLargePackObjects sets the object count above which a fetched pack is indexed from disk.
func WithLargePackObjects(n uint32) CacheOption {
	return func(c *Cache) { c.largePackObjects = n }
}

// PackedTypes counts the objects in each pack of a cached repository's folder by the type they
// are stored as, by pack name.
func PackedTypes(dir string) (map[string]map[plumbing.ObjectType]int, error) {
	packs, err := openPacks(filepath.Join(dir, "objects", "pack"))
	if err != nil {
		return nil, err
	}
	defer closePacks(packs)
	out := map[string]map[plumbing.ObjectType]int{}
	for _, p := range packs {
		types := map[plumbing.ObjectType]int{}
		for _, e := range p.entries {
			h, err := readPackedHeader(p.file, int64(e.Offset))
			if err != nil {
				return nil, err
			}
			types[h.typ]++
		}
		out["pack-"+p.hash.String()] = types
	}
	return out, nil
}
