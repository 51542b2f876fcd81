package git

import (
	"container/heap"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// objectsToPush lists the objects reachable from tip that a remote holding the commits known
// may lack, like git rev-list --objects tip --not known.
//
// go-git's own push answers this by first listing every object reachable from every remote ref,
// which on a long history costs seconds per push. Here the commit walk runs newest first and
// stops once every commit left is one the remote has; then only the trees of the new commits are
// walked, skipping whatever the trees of their parents on the remote already hold. The cost
// follows the size of the change, not of the history. Clock skew can only make the list longer
// (objects the remote already has), never shorter, so the pack is always complete.
func objectsToPush(s storer.EncodedObjectStorer, tip plumbing.Hash, known []plumbing.Hash) ([]plumbing.Hash, error) {
	commits, edge, err := commitsToPush(s, tip, known)
	if err != nil {
		return nil, err
	}
	skip := map[plumbing.Hash]bool{}
	for _, h := range edge {
		c, err := object.GetCommit(s, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", h, err)
		}
		if err := walkTree(s, c.TreeHash, skip, nil); err != nil {
			return nil, err
		}
	}
	var out []plumbing.Hash
	for _, c := range commits {
		out = append(out, c.Hash)
		if err := walkTree(s, c.TreeHash, skip, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// commitsToPush returns the commits reachable from tip that no commit of known reaches, newest
// first, and the edge: the commits of the remote they have as parents.
func commitsToPush(s storer.EncodedObjectStorer, tip plumbing.Hash, known []plumbing.Hash) (commits []*object.Commit, edge []plumbing.Hash, err error) {
	// A commit's paint: reachable from the tip (wanted), from a commit the remote holds
	// (onRemote), or both.
	const (
		wanted uint8 = 1 << iota
		onRemote
	)
	paint := map[plumbing.Hash]uint8{}
	q := &commitQueue{}
	push := func(h plumbing.Hash, p uint8) error {
		if paint[h]&p == p {
			return nil
		}
		c, err := object.GetCommit(s, h)
		if err != nil {
			if p == onRemote {
				// A remote commit the cache never fetched: it cannot help to skip anything.
				return nil
			}
			return fmt.Errorf("read commit %s: %w", h, err)
		}
		paint[h] |= p
		heap.Push(q, queued{hash: h, commit: c})
		return nil
	}
	if err := push(tip, wanted); err != nil {
		return nil, nil, err
	}
	for _, h := range known {
		if err := push(h, onRemote); err != nil {
			return nil, nil, err
		}
	}

	// Commits painted only wanted when they came out of the queue; a later one may still paint
	// them onRemote.
	var candidates []*object.Commit
	for q.Len() > 0 && q.anyNot(paint, onRemote) {
		e := heap.Pop(q).(queued)
		next := wanted
		if paint[e.hash]&onRemote != 0 {
			next = onRemote
		} else {
			candidates = append(candidates, e.commit)
		}
		for _, parent := range e.commit.ParentHashes {
			if err := push(parent, next); err != nil {
				return nil, nil, err
			}
		}
	}

	onEdge := map[plumbing.Hash]bool{}
	for _, c := range candidates {
		if paint[c.Hash]&onRemote != 0 {
			continue
		}
		commits = append(commits, c)
		for _, parent := range c.ParentHashes {
			if paint[parent]&onRemote != 0 && !onEdge[parent] {
				onEdge[parent] = true
				edge = append(edge, parent)
			}
		}
	}
	return commits, edge, nil
}

// walkTree adds every object of the tree not yet in seen to seen, and to out when out is not
// nil. A tree already seen is skipped whole: everything below it was seen with it.
func walkTree(s storer.EncodedObjectStorer, h plumbing.Hash, seen map[plumbing.Hash]bool, out *[]plumbing.Hash) error {
	if seen[h] {
		return nil
	}
	seen[h] = true
	if out != nil {
		*out = append(*out, h)
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return fmt.Errorf("read tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Submodule:
			// A gitlink names a commit of another repository; there is nothing to send.
		case e.Mode == filemode.Dir:
			if err := walkTree(s, e.Hash, seen, out); err != nil {
				return err
			}
		case !seen[e.Hash]:
			seen[e.Hash] = true
			if out != nil {
				*out = append(*out, e.Hash)
			}
		}
	}
	return nil
}
