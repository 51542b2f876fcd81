package git

import (
	"context"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sluicehq/sluice/pkg/git/gitobj"
	"github.com/sluicehq/sluice/pkg/text"
)

// CommitRequest is a commit written straight into the cache and pushed, with no working tree.
type CommitRequest struct {
	// Branch receives the commit; it is created when the remote does not have it.
	Branch string
	// Files maps paths to their new content.
	Files map[string][]byte
	// Delete lists paths (files or directories) to remove before Files are written.
	Delete []string
	// Replace starts from an empty tree, so Files are the commit's whole content, as a hydrator
	// writes a complete rendering.
	Replace bool
	// Message of the commit.
	Message string
	// Author (and committer); DefaultIdentity when empty.
	Author Identity
	// Now stamps the commit; time.Now when nil.
	Now func() time.Time
}

// CommitFiles writes a commit on top of req.Branch as last fetched (or as a new branch when the
// remote did not have it) and pushes it as a compare-and-swap against that head. It returns the
// new commit. Fetch the branch first; a stale head fails with ErrStale.
func (r *Repository) CommitFiles(ctx context.Context, req CommitRequest) (string, error) {
	ref, err := branchRef(req.Branch)
	if err != nil {
		return "", err
	}
	if req.Message == "" {
		return "", fmt.Errorf("a commit to %s needs a message", req.Branch)
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	sto := r.sh.sto
	parent, err := refValue(sto, trackingRef(ref))
	if err != nil {
		return "", err
	}
	var base plumbing.Hash
	var parents []plumbing.Hash
	if !parent.IsZero() {
		c, err := object.GetCommit(sto, parent)
		if err != nil {
			return "", notInCache(parent, err)
		}
		parents = []plumbing.Hash{parent}
		if !req.Replace {
			base = c.TreeHash
		}
	}
	tree, err := gitobj.WriteTree(sto, base, gitobj.Changes{Write: req.Files, Delete: req.Delete})
	if err != nil {
		return "", fmt.Errorf("commit to %s: %w", req.Branch, err)
	}
	sig := req.Author.signature(stamp(req.Now))
	h, err := gitobj.WriteCommit(sto, &object.Commit{
		Author: sig, Committer: sig, Message: req.Message, TreeHash: tree, ParentHashes: parents,
	})
	if err != nil {
		return "", fmt.Errorf("commit to %s: %w", req.Branch, err)
	}
	if err := r.pushLocked(ctx, ref, h, parent); err != nil {
		return "", err
	}
	return h.String(), nil
}

// AddNote attaches content to commit target under the repository's notes ref (replacing a note it
// had), on top of the notes ref as last fetched, and pushes it as a compare-and-swap.
func (r *Repository) AddNote(ctx context.Context, target string, content []byte, author Identity) error {
	h, err := parseSHA(target)
	if err != nil {
		return err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	sto := r.sh.sto
	parent, err := refValue(sto, trackingRef(r.notesRef))
	if err != nil {
		return err
	}
	note, err := gitobj.WriteNote(sto, parent, h, content, author.signature(time.Now()), "")
	if err != nil {
		return fmt.Errorf("note on %s: %w", text.ShortSHA(target), err)
	}
	return r.pushLocked(ctx, r.notesRef, note, parent)
}

// CreateBranch creates branch on the remote at sha, which must be in the cache. It fails with
// ErrStale if the branch already exists elsewhere, and succeeds if it is already at sha.
func (r *Repository) CreateBranch(ctx context.Context, branch, sha string) error {
	return r.Push(ctx, branch, sha, "")
}

func stamp(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}
