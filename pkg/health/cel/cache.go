package cel

import (
	"container/list"
	"sync"
)

// programCache is a bounded, concurrency-safe LRU of compiled programs keyed
// by expression text. Each entry compiles at most once, even when many
// workers ask for the same new expression at the same moment.
type programCache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // front is most recently used; values are *cacheEntry
	entries map[string]*list.Element
}

type cacheEntry struct {
	expr string
	once sync.Once
	prg  *Program
	err  error
}

func newProgramCache(max int) *programCache {
	return &programCache{max: max, order: list.New(), entries: make(map[string]*list.Element)}
}

// get returns the entry for expr, creating (and possibly evicting) under the
// lock. Compilation happens outside the lock via the entry's sync.Once.
func (c *programCache) get(expr string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[expr]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*cacheEntry)
	}
	e := &cacheEntry{expr: expr}
	c.entries[expr] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).expr)
	}
	return e
}

func (c *programCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
