package git

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// CatchUp makes branch source contain branch target (both as last fetched), for a merge that
// must fast-forward. When target has commits source lacks (a revert merged into an environment
// after its next proposal was made), it pushes onto source a commit whose parents are target and
// source and whose tree is source's: the proposal's manifests are unchanged, as MergeAndPush keeps
// them, and its merge into target becomes a fast-forward. The push is guarded on source being at
// expectedSourceSHA, so a proposal the hydrator replaced meanwhile is left alone (ErrStale, or
// ErrSourceMoved when the fetch already showed it).
//
// The result's Kind is MergeCommit and its SHA the new source commit when a commit was pushed;
// MergeFastForward when source already contains target; MergeUpToDate when target contains
// source (nothing to promote).
func (r *Repository) CatchUp(ctx context.Context, source, target, expectedSourceSHA string, opts MergeOptions) (MergeResult, error) {
	srcRef, dstRef, err := mergeRefs(source, target)
	if err != nil {
		return MergeResult{}, err
	}
	expected, err := parseSHA(expectedSourceSHA)
	if err != nil {
		return MergeResult{}, err
	}
	if opts.Message == "" {
		opts.Message = fmt.Sprintf("Catch %s up with %s\n\n%s has commits %s lacks; %s keeps its manifests, and now merges into %s by fast-forward.\n",
			source, target, target, source, source, target)
	}
	opts.ExpectedSourceSHA = expectedSourceSHA
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	dst, err := refValue(r.sh.sto, trackingRef(dstRef))
	if err != nil {
		return MergeResult{}, err
	}
	if dst.IsZero() {
		return MergeResult{}, fmt.Errorf("catch %s up with %s: %w", source, target, &BranchNotFoundError{Branches: []string{target}})
	}
	res, err := r.mergeLocked(srcRef, dstRef, dst, opts)
	if err != nil || res.Kind != MergeCommit {
		return res, err
	}
	if err := r.pushLocked(ctx, srcRef, plumbing.NewHash(res.SHA), expected); err != nil {
		return MergeResult{}, err
	}
	return res, nil
}
