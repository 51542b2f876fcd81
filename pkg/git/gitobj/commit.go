package gitobj

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// WriteCommit stores c and returns its hash. c.Hash is ignored: the hash comes from the content.
func WriteCommit(s storer.EncodedObjectStorer, c *object.Commit) (plumbing.Hash, error) {
	if c.TreeHash.IsZero() {
		return plumbing.ZeroHash, errors.New("a commit needs a tree")
	}
	fresh := &object.Commit{
		Author:       c.Author,
		Committer:    c.Committer,
		Message:      c.Message,
		TreeHash:     c.TreeHash,
		ParentHashes: c.ParentHashes,
	}
	return writeObject(s, fresh)
}

// ReadNote returns the content of the note that the notes commit attaches to target. Notes trees
// may be flat (one entry named by the full hex id) or fanned out into two-character directories,
// as git does once a notes ref grows; both are read.
func ReadNote(s storer.EncodedObjectStorer, notesCommit, target plumbing.Hash) ([]byte, bool, error) {
	_, blob, found, err := findNote(s, notesCommit, target)
	if err != nil || !found {
		return nil, found, err
	}
	b, err := object.GetBlob(s, blob)
	if err != nil {
		return nil, false, fmt.Errorf("read note blob %s: %w", blob, err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	content, err := readAll(r, b.Size)
	return content, err == nil, err
}

// WriteNote stores a notes commit that attaches content to target, on top of the notes commit
// parent (plumbing.ZeroHash for the first note), and returns its hash. An existing note on target
// is replaced where it is, so a fanned-out tree stays consistent.
func WriteNote(s storer.EncodedObjectStorer, parent, target plumbing.Hash, content []byte, sig object.Signature, message string) (plumbing.Hash, error) {
	path := target.String()
	var baseTree plumbing.Hash
	var parents []plumbing.Hash
	if !parent.IsZero() {
		existing, _, found, err := findNote(s, parent, target)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if found {
			path = existing
		}
		c, err := object.GetCommit(s, parent)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read notes commit %s: %w", parent, err)
		}
		baseTree = c.TreeHash
		parents = []plumbing.Hash{parent}
	}
	tree, err := WriteTree(s, baseTree, Changes{Write: map[string][]byte{path: content}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if message == "" {
		message = "Notes added by Sluice\n"
	}
	return WriteCommit(s, &object.Commit{
		Author: sig, Committer: sig, Message: message, TreeHash: tree, ParentHashes: parents,
	})
}

// findNote returns the path and blob of target's note in the notes commit.
func findNote(s storer.EncodedObjectStorer, notesCommit, target plumbing.Hash) (string, plumbing.Hash, bool, error) {
	c, err := object.GetCommit(s, notesCommit)
	if err != nil {
		return "", plumbing.ZeroHash, false, fmt.Errorf("read notes commit %s: %w", notesCommit, err)
	}
	tree, err := object.GetTree(s, c.TreeHash)
	if err != nil {
		return "", plumbing.ZeroHash, false, fmt.Errorf("read notes tree %s: %w", c.TreeHash, err)
	}
	dir, rest := "", target.String()
	for {
		var next *object.Tree
		for _, e := range tree.Entries {
			switch {
			case e.Name == rest && e.Mode != filemode.Dir:
				return dir + e.Name, e.Hash, true, nil
			case len(rest) > 2 && e.Name == rest[:2] && e.Mode == filemode.Dir:
				if next, err = object.GetTree(s, e.Hash); err != nil {
					return "", plumbing.ZeroHash, false, fmt.Errorf("read notes fan-out tree %s: %w", e.Hash, err)
				}
			}
		}
		if next == nil {
			return "", plumbing.ZeroHash, false, nil
		}
		tree, dir, rest = next, dir+rest[:2]+"/", rest[2:]
	}
}

// MaxNoteSize bounds how much of a note ReadNote reads; notes carry small metadata, and a huge
// blob should not be pulled into memory by mistake.
const MaxNoteSize = 1 << 20

func readAll(r io.Reader, size int64) ([]byte, error) {
	if size > MaxNoteSize {
		return nil, fmt.Errorf("note is %d bytes, more than the %d bytes a note may have", size, MaxNoteSize)
	}
	return io.ReadAll(io.LimitReader(r, MaxNoteSize))
}
