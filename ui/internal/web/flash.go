package web

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"sync"
	"time"
)

// flashes hold the "Done: …" banner of an action for the page it redirects to. The URL carries
// only a random key (?done=KEY); the text is the server's own description of what it did, so a
// link can never make the UI say something (a forged banner asking to run a command, say). A
// key lasts a minute, and at most flashLimit are kept.
type flashes struct {
	mu      sync.Mutex
	entries map[string]flash
}

type flash struct {
	text    string
	expires time.Time
}

const (
	flashTTL   = time.Minute
	flashLimit = 1024
)

// put keeps text and returns its key.
func (f *flashes) put(text string, now time.Time) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	key := hex.EncodeToString(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.entries == nil {
		f.entries = map[string]flash{}
	}
	f.sweep(now)
	f.entries[key] = flash{text: text, expires: now.Add(flashTTL)}
	return key
}

// get returns the text of key, or "" for a key it never gave or that expired.
func (f *flashes) get(key string, now time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[key]
	if !ok || now.After(e.expires) {
		return ""
	}
	return e.text
}

// sweep drops expired entries and, when still full, the one closest to expiring.
func (f *flashes) sweep(now time.Time) {
	var oldest string
	for k, e := range f.entries {
		if now.After(e.expires) {
			delete(f.entries, k)
		} else if oldest == "" || e.expires.Before(f.entries[oldest].expires) {
			oldest = k
		}
	}
	if len(f.entries) >= flashLimit {
		delete(f.entries, oldest)
	}
}

// pathOf is the path of the segments, each escaped: a name can never leave the UI's own pages
// (no "..", "/", "\" or scheme survives).
func pathOf(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// withDone adds the banner key to back, a path the UI built.
func withDone(back, key string) string {
	sep := "?"
	if strings.Contains(back, "?") {
		sep = "&"
	}
	return back + sep + "done=" + url.QueryEscape(key)
}
