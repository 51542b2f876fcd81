package gitdiff

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Result is the diff between two commits or two snapshots, bounded by Limits.
type Result struct {
	Files []File
	// Omitted counts the changed files not shown, because Limits.Files or Limits.PatchBytes was
	// reached; TooLarge then says which.
	Omitted  int
	TooLarge string
}

// File is one changed file (or object) and its unified diff.
type File struct {
	// Name is the path after the change; OldName the path before, when it differs.
	Name, OldName string
	// Status is added, deleted, modified or renamed.
	Status string
	Binary bool
	// TooLarge is set when either side is over Limits.FileBytes: its lines are not diffed.
	TooLarge bool
	Lines    []Line
}

// Line is one line of a unified diff.
type Line struct {
	// Kind is "add", "del", "hunk" (an @@ header) or "context".
	Kind string
	Text string
}

// ErrUnknownCommit is a commit the fetched branches do not hold.
var ErrUnknownCommit = errors.New("commit not found")

// Diff is the change from commit from to commit to. An empty from means to's first parent: the
// change to brought to its branch.
func (r *Repo) Diff(ctx context.Context, from, to string, lim Limits) (Result, error) {
	lim = lim.WithDefaults()
	toCommit, err := r.commit(to)
	if err != nil {
		return Result{}, err
	}
	var fromTree *object.Tree
	switch {
	case from != "":
		c, err := r.commit(from)
		if err != nil {
			return Result{}, err
		}
		if fromTree, err = c.Tree(); err != nil {
			return Result{}, err
		}
	case toCommit.NumParents() > 0:
		parent, err := toCommit.Parent(0)
		if err != nil {
			return Result{}, fmt.Errorf("the parent of %s: %w", to, err)
		}
		if fromTree, err = parent.Tree(); err != nil {
			return Result{}, err
		}
	}
	toTree, err := toCommit.Tree()
	if err != nil {
		return Result{}, err
	}
	changes, err := object.DiffTreeWithOptions(ctx, fromTree, toTree, object.DefaultDiffTreeOptions)
	if err != nil {
		return Result{}, err
	}
	return diffChanges(ctx, changes, lim)
}

func (r *Repo) commit(sha string) (*object.Commit, error) {
	if !plumbing.IsHash(sha) {
		return nil, fmt.Errorf("%q is not a commit SHA", sha)
	}
	c, err := r.repo.CommitObject(plumbing.NewHash(sha))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: %s is not on the branches read", ErrUnknownCommit, sha)
	}
	return c, err
}

// diffChanges renders each change, in path order, until a bound is reached.
func diffChanges(ctx context.Context, changes object.Changes, lim Limits) (Result, error) {
	return collect(ctx, len(changes), func(i int) (File, error) { return fileOf(ctx, changes[i], lim.FileBytes) }, lim)
}

// collect renders n files, in order, until lim.Files files or lim.PatchBytes of text are shown,
// and says how many it left out and why.
func collect(ctx context.Context, n int, file func(i int) (File, error), lim Limits) (Result, error) {
	var res Result
	budget := lim.PatchBytes
	for i := range n {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if len(res.Files) == lim.Files {
			res.Omitted, res.TooLarge = n-i, fmt.Sprintf("more than %d files changed", lim.Files)
			break
		}
		f, err := file(i)
		if err != nil {
			return Result{}, err
		}
		if size(f) > budget {
			res.Omitted, res.TooLarge = n-i, fmt.Sprintf("the diff is over %d KiB", lim.PatchBytes>>10)
			break
		}
		budget -= size(f)
		res.Files = append(res.Files, f)
	}
	return res, nil
}

func fileOf(ctx context.Context, ch *object.Change, maxBytes int64) (File, error) {
	from, to, err := ch.Files()
	if err != nil {
		return File{}, err
	}
	f := File{Name: ch.To.Name, OldName: ch.From.Name, Status: "modified"}
	switch {
	case from == nil:
		f.Status, f.OldName = "added", ""
	case to == nil:
		f.Status, f.Name, f.OldName = "deleted", ch.From.Name, ""
	case ch.From.Name != ch.To.Name:
		f.Status = "renamed"
	default:
		f.OldName = ""
	}
	if (from != nil && from.Size > maxBytes) || (to != nil && to.Size > maxBytes) {
		f.TooLarge = true
		return f, nil
	}
	patch, err := ch.PatchContext(ctx)
	if err != nil {
		return File{}, err
	}
	for _, fp := range patch.FilePatches() {
		f.Binary = f.Binary || fp.IsBinary()
	}
	if !f.Binary {
		f.Lines, err = unified(patch)
	}
	return f, err
}

// size is what a file costs of the page's budget.
func size(f File) int {
	n := len(f.Name) + len(f.OldName)
	for _, l := range f.Lines {
		n += len(l.Text) + 1
	}
	return n
}
