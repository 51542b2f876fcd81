package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/sluicehq/sluice/pkg/text"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrTagNotFound means the remote has no such tag.
var ErrTagNotFound = errors.New("tag not found on the remote")

// ErrPathNotFound means a commit has no folder at the path asked for.
var ErrPathNotFound = errors.New("path not found in the commit")

// FetchTag brings refs/tags/<tag> from the remote into the cache and returns the commit it
// names; an annotated tag is peeled. Like Fetch, it follows the remote even when the tag was
// moved. The error wraps ErrTagNotFound when the remote has no such tag.
func (r *Repository) FetchTag(ctx context.Context, tag string) (string, error) {
	name := plumbing.NewTagReferenceName(strings.TrimPrefix(tag, "refs/tags/"))
	if tag == "" || name.Validate() != nil {
		return "", fmt.Errorf("%q is not a valid tag name", tag)
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	err := r.fetchLocked(ctx, map[plumbing.ReferenceName]bool{name: true})
	var missing *BranchNotFoundError
	if errors.As(err, &missing) {
		return "", fmt.Errorf("%w: %s has no tag %s", ErrTagNotFound, r.URL(), name.Short())
	}
	if err != nil {
		return "", err
	}
	h, err := refValue(r.sh.sto, trackingRef(name))
	if err != nil {
		return "", err
	}
	return peel(r, h)
}

// peel follows annotated tags (and tags of tags) down to a commit.
func peel(r *Repository, h plumbing.Hash) (string, error) {
	for range 10 {
		tag, err := object.GetTag(r.sh.sto, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			if _, err := object.GetCommit(r.sh.sto, h); err != nil {
				return "", notInCache(h, err)
			}
			return h.String(), nil
		}
		if err != nil {
			return "", err
		}
		if tag.TargetType != plumbing.CommitObject && tag.TargetType != plumbing.TagObject {
			return "", fmt.Errorf("tag %s names a %s, not a commit", tag.Name, tag.TargetType)
		}
		h = tag.Target
	}
	return "", fmt.Errorf("tag chain at %s is too long", h)
}

// ReadFiles returns the regular files under dir in commit sha (dir "" is the root), keyed by
// their path relative to dir, keeping those keep accepts. It stops with an error once the files
// kept exceed limit bytes, so a huge folder cannot fill memory. Symbolic links and submodules
// are skipped. The error wraps ErrPathNotFound when dir is not a folder of the commit.
func (r *Repository) ReadFiles(sha, dir string, keep func(name string) bool, limit int64) (map[string][]byte, error) {
	h, err := parseSHA(sha)
	if err != nil {
		return nil, err
	}
	dir = strings.Trim(path.Clean("/"+dir), "/")
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	commit, err := object.GetCommit(r.sh.sto, h)
	if err != nil {
		return nil, notInCache(h, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if tree, err = tree.Tree(dir); err != nil {
			return nil, fmt.Errorf("%w: %s has no folder %q", ErrPathNotFound, text.ShortSHA(sha), dir)
		}
	}
	files := map[string][]byte{}
	var total int64
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if !entry.Mode.IsFile() || entry.Mode == filemode.Symlink || !keep(name) {
			continue
		}
		data, err := readBlob(r, entry.Hash)
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", name, text.ShortSHA(sha), err)
		}
		if total += int64(len(data)); total > limit {
			return nil, fmt.Errorf("the files under %q at %s are over %d bytes", dir, text.ShortSHA(sha), limit)
		}
		files[name] = data
	}
}

func readBlob(r *Repository, h plumbing.Hash) ([]byte, error) {
	blob, err := object.GetBlob(r.sh.sto, h)
	if err != nil {
		return nil, err
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// IsOnBranch reports whether commit sha is reachable from branch, as last fetched.
func (r *Repository) IsOnBranch(branch, sha string) (bool, error) {
	tip, err := r.Resolve(branch)
	if err != nil {
		return false, err
	}
	return r.IsAncestor(sha, tip)
}
