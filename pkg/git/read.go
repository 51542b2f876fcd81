package git

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitInfo describes one commit.
type CommitInfo struct {
	SHA string
	// Time is the committer time: when the commit was made, or last rewritten.
	Time time.Time
	// AuthorTime is when the change was first written.
	AuthorTime time.Time
	// Subject is the first line of the message.
	Subject string
	// Message is the whole message.
	Message string
	// Author is "Name <email>".
	Author  string
	Parents []string
}

func commitInfo(c *object.Commit) CommitInfo {
	parents := make([]string, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		parents[i] = p.String()
	}
	subject, _, _ := strings.Cut(strings.TrimLeft(c.Message, "\n"), "\n")
	return CommitInfo{
		SHA:        c.Hash.String(),
		Time:       c.Committer.When,
		AuthorTime: c.Author.When,
		Subject:    strings.TrimSpace(subject),
		Message:    c.Message,
		Author:     fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		Parents:    parents,
	}
}

func parseSHA(sha string) (plumbing.Hash, error) {
	if !plumbing.IsHash(sha) {
		return plumbing.ZeroHash, fmt.Errorf("%q is not a full commit SHA (40 hex digits)", sha)
	}
	return plumbing.NewHash(sha), nil
}

// Resolve returns the commit branch pointed at when it was last fetched. The error wraps
// ErrBranchNotFound when the remote did not have it (or it was never fetched).
func (r *Repository) Resolve(branch string) (string, error) {
	ref, err := branchRef(branch)
	if err != nil {
		return "", err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	h, err := refValue(r.sh.sto, trackingRef(ref))
	if err != nil {
		return "", fmt.Errorf("read branch %s from the git cache: %w", branch, err)
	}
	if h.IsZero() {
		return "", &BranchNotFoundError{Branches: []string{branch}}
	}
	return h.String(), nil
}

// Commit describes the commit sha, which must be in the cache.
func (r *Repository) Commit(sha string) (CommitInfo, error) {
	h, err := parseSHA(sha)
	if err != nil {
		return CommitInfo{}, err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	c, err := object.GetCommit(r.sh.sto, h)
	if err != nil {
		return CommitInfo{}, notInCache(h, err)
	}
	return commitInfo(c), nil
}

// Log returns up to limit commits reachable from branch (as last fetched), newest first by
// committer time, as git log shows them.
func (r *Repository) Log(branch string, limit int) ([]CommitInfo, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("log limit must be positive, not %d", limit)
	}
	tip, err := r.Resolve(branch)
	if err != nil {
		return nil, err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	head := plumbing.NewHash(tip)
	c, err := object.GetCommit(r.sh.sto, head)
	if err != nil {
		return nil, notInCache(head, err)
	}
	iter := object.NewCommitIterCTime(c, nil, nil)
	defer iter.Close()
	var out []CommitInfo
	for len(out) < limit {
		c, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", branch, err)
		}
		out = append(out, commitInfo(c))
	}
	return out, nil
}

func notInCache(h plumbing.Hash, err error) error {
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return fmt.Errorf("commit %s is not in the git cache: fetch a branch that contains it", h)
	}
	return fmt.Errorf("read commit %s: %w", h, err)
}
