// Package gitobj writes git objects (blobs, trees, commits and notes) straight into an object
// store. Nothing here needs a working tree or an index, so a bare repository, an in-memory
// store or a server-side store can all be written the same way.
package gitobj

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Changes describes how a new tree differs from its base tree. Deletes apply before writes, so
// deleting a directory and writing files below it replaces the directory's content.
type Changes struct {
	// Write maps slash-separated paths to their new content. Missing directories are created.
	Write map[string][]byte
	// Delete lists paths (files or whole directories) to remove. Deleting a missing path is not an
	// error: the result is the same.
	Delete []string
}

// WriteBlob stores data as a blob and returns its hash.
func WriteBlob(s storer.EncodedObjectStorer, data []byte) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// WriteTree applies changes to the tree base (plumbing.ZeroHash for an empty tree) and returns the
// hash of the resulting root tree. Only the trees on the changed paths are rewritten; every other
// entry keeps its hash.
func WriteTree(s storer.EncodedObjectStorer, base plumbing.Hash, changes Changes) (plumbing.Hash, error) {
	root := &pathNode{children: map[string]*pathNode{}}
	for _, p := range changes.Delete {
		parts, err := splitPath(p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		root.remove(parts)
	}
	if err := checkWritesAgree(changes.Write); err != nil {
		return plumbing.ZeroHash, err
	}
	for p, content := range changes.Write {
		parts, err := splitPath(p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		root.write(parts, content)
	}
	h, _, err := root.apply(s, base, "")
	return h, err
}

// pathNode is one level of the requested changes, keyed by path component.
type pathNode struct {
	content []byte
	isFile  bool
	// removed drops the entry; reset rebuilds a directory from nothing instead of from its base.
	removed, reset bool
	children       map[string]*pathNode
}

func (n *pathNode) child(name string) *pathNode {
	c, ok := n.children[name]
	if !ok {
		c = &pathNode{children: map[string]*pathNode{}}
		n.children[name] = c
	}
	return c
}

func (n *pathNode) remove(parts []string) {
	c := n.child(parts[0])
	if len(parts) == 1 {
		*c = pathNode{removed: true, children: map[string]*pathNode{}}
		return
	}
	if !c.removed {
		c.remove(parts[1:])
	}
}

func (n *pathNode) write(parts []string, content []byte) {
	c := n.child(parts[0])
	if len(parts) == 1 {
		*c = pathNode{isFile: true, content: content, children: map[string]*pathNode{}}
		return
	}
	if c.removed || c.isFile {
		// The path was deleted, or is now a file: the directory starts from nothing.
		*c = pathNode{reset: true, children: map[string]*pathNode{}}
	}
	c.write(parts[1:], content)
}

// apply rewrites the tree at base and reports whether the result is empty, so that empty
// directories vanish as they do in git.
func (n *pathNode) apply(s storer.EncodedObjectStorer, base plumbing.Hash, dir string) (plumbing.Hash, bool, error) {
	entries := map[string]object.TreeEntry{}
	if !base.IsZero() {
		t, err := object.GetTree(s, base)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("read tree %s of %q: %w", base, dir, err)
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	for name, child := range n.children {
		path := strings.TrimPrefix(dir+"/"+name, "/")
		switch {
		case child.removed:
			delete(entries, name)
		case child.isFile:
			h, err := WriteBlob(s, child.content)
			if err != nil {
				return plumbing.ZeroHash, false, fmt.Errorf("write %q: %w", path, err)
			}
			mode := filemode.Regular
			if old, ok := entries[name]; ok && old.Mode == filemode.Executable {
				mode = filemode.Executable
			}
			entries[name] = object.TreeEntry{Name: name, Mode: mode, Hash: h}
		default:
			var childBase plumbing.Hash
			if old, ok := entries[name]; ok && old.Mode == filemode.Dir && !child.reset {
				childBase = old.Hash
			}
			h, empty, err := child.apply(s, childBase, path)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if empty {
				delete(entries, name)
				continue
			}
			entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}
	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(entries))}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	h, err := writeObject(s, t)
	return h, len(t.Entries) == 0, err
}

// checkWritesAgree refuses a path written both as a file and as a directory of another written
// file, which would otherwise depend on map order.
func checkWritesAgree(writes map[string][]byte) error {
	for p := range writes {
		for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
			if _, ok := writes[p[:i]]; ok {
				return fmt.Errorf("path %q is written as a file and as a directory (of %q)", p[:i], p)
			}
		}
	}
	return nil
}

func nextSlash(p string, after int) int {
	if i := strings.IndexByte(p[after+1:], '/'); i >= 0 {
		return after + 1 + i
	}
	return -1
}

func splitPath(p string) ([]string, error) {
	parts := strings.Split(p, "/")
	for _, part := range parts {
		switch {
		case part == "", part == ".", part == "..":
			return nil, fmt.Errorf("path %q is not a clean relative path (no empty, . or .. components, no leading or trailing /)", p)
		case strings.EqualFold(part, ".git"):
			return nil, fmt.Errorf("path %q has a .git component, which git refuses to check out", p)
		case strings.ContainsRune(part, 0):
			return nil, fmt.Errorf("path %q contains a NUL byte", p)
		}
	}
	return parts, nil
}

type encodable interface {
	Encode(plumbing.EncodedObject) error
}

func writeObject(s storer.EncodedObjectStorer, o encodable) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}
