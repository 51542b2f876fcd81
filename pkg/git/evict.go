package git

import (
	"os"
	"path/filepath"
	"time"
)

// DefaultEvictAfter is how long a cached repository may go without a fetch before the cache
// removes it. A promoter fetches every repository it follows at least once per poll interval (5
// minutes by default), so only repositories no strategy names any more get this old: a
// ScmRepository deleted or moved to another URL. A strategy suspended for longer fetches its
// repository again from nothing when it resumes.
const DefaultEvictAfter = 7 * 24 * time.Hour

// fetchMarker is the file of a cached repository whose modification time is its last fetch.
const fetchMarker = "sluice-last-fetch"

// evictInterval is how often, at most, Open looks for repositories to evict.
const evictInterval = time.Hour

// WithEvictAfter sets how long a repository may go unfetched before it is removed; 0 or less
// keeps DefaultEvictAfter.
func WithEvictAfter(d time.Duration) CacheOption {
	return func(c *Cache) {
		if d > 0 {
			c.evictAfter = d
		}
	}
}

// markFetched records a fetch of sh, for eviction. A failure only means the repository may be
// evicted and fetched again from nothing later.
func markFetched(sh *shared) {
	now := time.Now()
	path := filepath.Join(sh.dir, fetchMarker)
	if err := os.Chtimes(path, now, now); err != nil {
		_ = os.WriteFile(path, nil, 0o600)
	}
}

// evictStale removes the cached repositories not fetched for evictAfter, except those this
// process has opened: their handles are in use. A repository never fetched counts from the
// time its folder was made. It runs when the cache is made, then at most once per
// evictInterval, from Open.
func (c *Cache) evictStale() {
	c.mu.Lock()
	if time.Since(c.evicted) < evictInterval && !c.evicted.IsZero() {
		c.mu.Unlock()
		return
	}
	c.evicted = time.Now()
	open := make(map[string]bool, len(c.repos))
	for key := range c.repos {
		open[key] = true
	}
	c.mu.Unlock()

	entries, err := os.ReadDir(c.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !isCacheKey(e.Name()) || open[e.Name()] {
			continue
		}
		dir := filepath.Join(c.root, e.Name())
		info, err := os.Stat(filepath.Join(dir, fetchMarker))
		if err != nil {
			info, err = os.Stat(dir)
		}
		if err != nil || time.Since(info.ModTime()) < c.evictAfter {
			continue
		}
		c.mu.Lock()
		_, reopened := c.repos[e.Name()]
		if !reopened {
			// Held under the cache's lock, so an Open of the same URL waits for the removal.
			err = os.RemoveAll(dir)
		}
		c.mu.Unlock()
		if err == nil && !reopened {
			c.log.Info("removed a git cache repository no strategy has fetched for a while", "dir", dir, "unfetchedFor", time.Since(info.ModTime()).Round(time.Minute))
		}
	}
}

// isCacheKey reports whether name is a folder name cacheKey makes: 32 lower-case hex digits.
func isCacheKey(name string) bool {
	if len(name) != 32 {
		return false
	}
	for _, r := range name {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
