package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Maintenance sets when a cached repository's objects are consolidated into one pack.
//
// Every fetch that brings something adds a pack, and every commit the cache writes (merges,
// notes, CommitFiles) adds loose objects. go-git looks an object up by probing every pack index in
// turn, so months of fetches slow every read down. After a fetch, when a repository holds more
// packs or loose objects than allowed, it is repacked under its lock: every object a ref reaches
// (branches and notes) goes into one new pack, which replaces the old packs and the loose objects.
type Maintenance struct {
	// MaxPacks is how many pack files a repository may hold before it is repacked. Default
	// DefaultMaxPacks.
	MaxPacks int
	// MaxLooseObjects is how many loose objects a repository may hold before it is repacked.
	// Default DefaultMaxLooseObjects.
	MaxLooseObjects int
	// KeepUnreachable is how long a loose object that no ref reaches is kept: a commit made by
	// Merge but not pushed yet, or one whose push lost a race. Objects that no ref reaches any
	// more in packs (a branch the remote rewrote) are dropped by a repack. Default
	// DefaultKeepUnreachable.
	KeepUnreachable time.Duration
	// LargePackObjects is the size, in objects, from which a pack is kept as it is by a repack,
	// when it also holds at least twice as many objects as the smaller packs and the loose
	// objects together: the repack then rolls only those into one new pack, as git's geometric
	// repack does. A full repack walks every object a ref reaches and its memory follows their
	// number (about 1 KiB of RSS an object: 1 GiB for a history of a million objects); a roll-up
	// follows the objects fetched since the large pack. Objects no ref reaches are dropped only
	// by a full repack, which comes once the smaller packs hold half as many objects as the
	// large one. Default DefaultLargePackObjects.
	LargePackObjects int
	// Disabled turns repacking off.
	Disabled bool
}

const (
	// DefaultMaxPacks keeps each lookup's probing of pack indexes to about a microsecond (see
	// docs/benchmarks.md).
	DefaultMaxPacks = 32
	// DefaultMaxLooseObjects is lower than git gc's 6,700 (gc.auto); a merge commit is one
	// loose object, so it takes about 2,000 promotions.
	DefaultMaxLooseObjects = 2000
	// DefaultKeepUnreachable is git gc's own default (gc.pruneExpire).
	DefaultKeepUnreachable = 14 * 24 * time.Hour
	// DefaultLargePackObjects keeps a full repack's memory to about 50 MiB (see
	// docs/benchmarks.md): a history of about 10,000 commits.
	DefaultLargePackObjects = 50000
)

// retryMaintenanceAfter is how long a repository whose repack failed waits for the next attempt.
const retryMaintenanceAfter = time.Hour

// WithMaintenance sets when repositories are repacked; zero fields take their defaults.
func WithMaintenance(m Maintenance) CacheOption {
	return func(c *Cache) { c.maintenance = m }
}

func (m Maintenance) withDefaults() Maintenance {
	if m.MaxPacks <= 0 {
		m.MaxPacks = DefaultMaxPacks
	}
	if m.MaxLooseObjects <= 0 {
		m.MaxLooseObjects = DefaultMaxLooseObjects
	}
	if m.KeepUnreachable <= 0 {
		m.KeepUnreachable = DefaultKeepUnreachable
	}
	if m.LargePackObjects <= 0 {
		m.LargePackObjects = DefaultLargePackObjects
	}
	return m
}

// maintainLocked repacks sh when it holds too many packs or loose objects. Call it with sh.mu
// held. A failure is logged, never returned: the fetch that came before it did succeed, and the
// repository is readable whatever step failed.
func (c *Cache) maintainLocked(sh *shared) {
	m := c.maintenance
	if m.Disabled || time.Now().Before(sh.maintenanceAfter) {
		return
	}
	before, err := countObjects(sh.dir)
	if err == nil && before.packs <= m.MaxPacks && before.loose-sh.looseKept <= m.MaxLooseObjects {
		return
	}

	start := time.Now()
	var res repackResult
	if err == nil {
		res, err = repack(sh.dir, m, c.maintenanceStep)
	}
	if res.changedPacks {
		sh.reopenStorage()
	}
	after, countErr := countObjects(sh.dir)
	if err == nil {
		err = countErr
	}
	if err != nil {
		sh.maintenanceAfter = time.Now().Add(retryMaintenanceAfter)
		c.log.Warn("cannot repack a git cache repository; it stays readable as it is, and the repack is tried again later",
			"url", redactURL(sh.url), "dir", sh.dir, "reason", redactText(err.Error(), nil), "retryIn", retryMaintenanceAfter)
		return
	}
	sh.looseKept = after.loose
	if !res.changedPacks {
		// No ref reaches anything: there was nothing to pack. Wait as after a failure.
		sh.maintenanceAfter = time.Now().Add(retryMaintenanceAfter)
		return
	}
	c.log.Info("repacked a git cache repository", "url", redactURL(sh.url),
		"packsBefore", before.packs, "looseBefore", before.loose,
		"packsAfter", after.packs, "looseAfter", after.loose,
		"objects", res.objects, "packsKept", res.keptPacks, "duration", time.Since(start).Round(time.Millisecond))
}

// objectCounts is what a repository's objects folder holds.
type objectCounts struct {
	packs int
	loose int
}

// countObjects counts pack files and loose objects from the directory listing alone, without
// opening any.
func countObjects(dir string) (objectCounts, error) {
	var n objectCounts
	packs, err := os.ReadDir(filepath.Join(dir, "objects", "pack"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	for _, e := range packs {
		if isPackName(e.Name()) {
			n.packs++
		}
	}
	err = forEachLooseObject(dir, func(plumbing.Hash, string) error {
		n.loose++
		return nil
	})
	return n, err
}

func isPackName(name string) bool {
	h, ok := strings.CutSuffix(name, ".pack")
	return ok && strings.HasPrefix(h, "pack-") && plumbing.IsHash(strings.TrimPrefix(h, "pack-"))
}

// forEachLooseObject calls fn with each loose object's hash and path.
func forEachLooseObject(dir string, fn func(h plumbing.Hash, path string) error) error {
	objects := filepath.Join(dir, "objects")
	fanout, err := os.ReadDir(objects)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, d := range fanout {
		if !d.IsDir() || len(d.Name()) != 2 || !isHex(d.Name()) {
			continue
		}
		sub := filepath.Join(objects, d.Name())
		entries, err := os.ReadDir(sub)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := d.Name() + e.Name()
			if e.IsDir() || !plumbing.IsHash(name) {
				continue
			}
			if err := fn(plumbing.NewHash(name), filepath.Join(sub, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// Steps of a repack, in order, named for the maintenance step hook.
const (
	stepTempWritten  = "temp-files-written"
	stepIndexInPlace = "index-in-place"
	stepPackInPlace  = "pack-in-place"
	stepOldPackGone  = "old-pack-removed"
	stepLooseGone    = "loose-object-removed"
)

func runStep(hook func(string) error, step string) error {
	if hook == nil {
		return nil
	}
	if err := hook(step); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	return nil
}
