package git

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// removeLeftovers deletes from a cached repository what an interrupted write left behind.
//
// go-git stores a fetched pack in a tmp_pack_ file, then writes its index under the final name,
// then renames the pack next to it; a loose object goes through a tmp_obj_ file. A repack writes
// tmp_pack_ and tmp_idx_ files, then renames the index into place before the pack (see repack).
// A process killed in between, or a download that fails, removes none of it. Partial packs would pile up, up to a
// whole clone's size per interrupted fetch, until the disk is full; and an index without its pack,
// partial as it may be, would be kept as it is when the same pack is fetched again, making its
// objects unreadable. Call it with the repository's lock held: this process is the only writer
// (go-git runs with exclusive access), so whatever sits at these names then is left over.
func removeLeftovers(dir string) error {
	packDir := filepath.Join(dir, "objects", "pack")
	entries, err := os.ReadDir(packDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		idx, isIdx := strings.CutSuffix(name, ".idx")
		leftover := strings.HasPrefix(name, "tmp_pack_") || strings.HasPrefix(name, "tmp_obj_") || strings.HasPrefix(name, "tmp_idx_") ||
			(isIdx && strings.HasPrefix(name, "pack-") && !names[idx+".pack"])
		if !leftover || e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(packDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
