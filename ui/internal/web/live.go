package web

import (
	"slices"
	"strings"

	"github.com/sluicehq/sluice/ui/internal/store"
)

// maxStreamKeys bounds the keys a stream may ask for; a page names at most 64 (store.Reads).
const maxStreamKeys = 128

// pageKeys is what a page shows, as keys (store.Key): what it read from the store while it was
// rendered, and each kind it declares (watch) that it read no key of, whole, so a read by a
// path that records no key still refreshes the page. A page that declares nothing (a form, a
// confirmation) is not live, whatever it read.
func pageKeys(read []store.Key, watch string) string {
	if watch == "" {
		return ""
	}
	out := make([]string, 0, len(read))
	kinds := map[string]bool{}
	for _, k := range read {
		out = append(out, string(k))
		kind, _, _, _ := store.ParseKey(string(k))
		kinds[kind] = true
	}
	for _, kind := range strings.Split(watch, ",") {
		if kind != "" && !kinds[kind] {
			out = append(out, kind)
			kinds[kind] = true
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// streamKeys parses a stream's ?watch= list; it drops malformed keys and keeps maxStreamKeys.
func streamKeys(watch string) []store.Key {
	var out []store.Key
	for _, s := range strings.Split(watch, ",") {
		if _, _, _, ok := store.ParseKey(s); ok && len(out) < maxStreamKeys && !slices.Contains(out, store.Key(s)) {
			out = append(out, store.Key(s))
		}
	}
	return out
}

// matching returns the keys that the changes concern, sorted, and store.AnyKind when a CRD came
// or went. Only keys the stream asked for go back, and only for changes the person may see
// (store.Subscribe), so a stream learns nothing of objects it may not read.
func matching(keys []store.Key, changes []store.Change) []string {
	var out []string
	for _, c := range changes {
		if c.Kind == store.AnyKind {
			if !slices.Contains(out, store.AnyKind) {
				out = append(out, store.AnyKind)
			}
			continue
		}
		for _, k := range keys {
			if k.Matches(c) && !slices.Contains(out, string(k)) {
				out = append(out, string(k))
			}
		}
	}
	slices.Sort(out)
	return out
}
