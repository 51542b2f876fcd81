package store

import (
	"net/url"
	"slices"
	"strings"
	"sync"
)

// A key names what a page shows, so that its stream is told only the changes to it:
// "Kind/namespace/name" one object, "Kind/namespace" every object of a kind in a namespace (a
// page that lists them), "Kind" every object of the kind, and AnyKind every change.
type Key string

// KeyOf is the key of one object; an empty name or namespace widens it.
func KeyOf(kind, namespace, name string) Key {
	switch {
	case namespace == "" && name == "":
		return Key(kind)
	case name == "":
		return Key(kind + "/" + namespace)
	}
	return Key(kind + "/" + namespace + "/" + name)
}

// Pages also show objects found by index rather than by name: the objects that reference a gate,
// and the delivery agents that deploy a branch. Any object of those kinds may start or stop
// being among them, so such a page names what it shows by what they affect (GateTargetsKey,
// AgentsKey), and each change of such an object carries the keys it affects, before and after
// (Change.Affects): a page is told a change of those kinds only when it concerns what it shows.
const (
	// GateTargetsKind is the kind of the keys of the objects that reference one gate.
	GateTargetsKind = "GateTargets"
	// AgentsKind is the kind of the keys of the agents that deploy one branch of a repository.
	AgentsKind = "Agents"
)

// GateTargetsKey is the key of the objects whose gating.sluice.dev/gates annotation names the
// gate namespace/name.
func GateTargetsKey(namespace, name string) Key { return KeyOf(GateTargetsKind, namespace, name) }

// agentsKey is the key of the agents that deploy the branch indexed as repositoryBranch (a
// repository key such as git.example.com/acme/deploy, "#", and the branch), escaped into one
// segment of a key.
func agentsKey(indexKey string) Key { return KeyOf(AgentsKind, url.PathEscape(indexKey), "") }

// ParseKey splits a key into kind, namespace and name; ok is false for a malformed one.
func ParseKey(s string) (kind, namespace, name string, ok bool) {
	parts := strings.Split(s, "/")
	if len(parts) > 3 || slices.Contains(parts, "") {
		return "", "", "", false
	}
	parts = append(parts, "", "")
	return parts[0], parts[1], parts[2], true
}

// Matches reports whether the change concerns what the key names. A change without a name (a
// kind's objects in a namespace changed) matches every key of that kind and namespace.
// A change that affects another key (Change.Affects) matches the keys that cover that one.
func (k Key) Matches(c Change) bool {
	if c.Kind == AnyKind {
		return true
	}
	if c.Affects != "" {
		kind, ns, name, ok := ParseKey(string(c.Affects))
		return ok && k.Matches(Change{Kind: kind, Namespace: ns, Name: name})
	}
	kind, ns, name, ok := ParseKey(string(k))
	if !ok || kind != c.Kind {
		return false
	}
	return (ns == "" || c.Namespace == "" || ns == c.Namespace) && (name == "" || c.Name == "" || name == c.Name)
}

// maxKeys bounds a page's keys: past it, objects widen to their namespace, then to their kind,
// so the stream's URL stays short and matching stays cheap.
const maxKeys = 64

// Reads collects the keys of what one page read from the store while it was rendered.
type Reads struct {
	mu   sync.Mutex
	keys map[Key]struct{}
}

func (r *Reads) add(k Key) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[Key]struct{}{}
	}
	r.keys[k] = struct{}{}
}

// Keys returns the keys read so far, sorted, at most maxKeys of them, each object's key
// dropped when a wider one of the same page covers it.
func (r *Reads) Keys() []Key {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	keys := make([]Key, 0, len(r.keys))
	for k := range r.keys {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	keys = covered(keys)
	for depth := 2; len(keys) > maxKeys && depth > 0; depth-- {
		for i, k := range keys {
			if parts := strings.SplitN(string(k), "/", 3); len(parts) > depth {
				keys[i] = Key(strings.Join(parts[:depth], "/"))
			}
		}
		keys = covered(keys)
	}
	return keys
}

// covered sorts keys and drops those a wider key in keys includes, and duplicates.
func covered(keys []Key) []Key {
	set := map[Key]bool{}
	for _, k := range keys {
		set[k] = true
	}
	out := keys[:0]
	for k := range set {
		parts := strings.Split(string(k), "/")
		wider := false
		for n := 1; n < len(parts); n++ {
			if set[Key(strings.Join(parts[:n], "/"))] {
				wider = true
			}
		}
		if !wider {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
