package git

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sluicehq/sluice/pkg/git/gitobj"
	"github.com/sluicehq/sluice/pkg/text"
)

// Identity is the name and e-mail recorded on commits this package writes.
type Identity struct {
	Name  string
	Email string
}

// DefaultIdentity signs commits when the caller names nobody.
var DefaultIdentity = Identity{Name: "Sluice", Email: "sluice@noreply.sluice.dev"}

func (id Identity) signature(now time.Time) object.Signature {
	if id.Name == "" && id.Email == "" {
		id = DefaultIdentity
	}
	return object.Signature{Name: id.Name, Email: id.Email, When: now}
}

// MergeKind is how a merge moved the target.
type MergeKind string

const (
	// MergeUpToDate: the target already contains the source; nothing to do.
	MergeUpToDate MergeKind = "UpToDate"
	// MergeFastForward: the target moves to the source commit (or is created there).
	MergeFastForward MergeKind = "FastForward"
	// MergeCommit: a merge commit was made, with the target and the source as parents.
	MergeCommit MergeKind = "MergeCommit"
)

// MergeOptions tunes the merge commit, when one is needed.
type MergeOptions struct {
	// Author of the merge commit; DefaultIdentity when empty.
	Author Identity
	// Committer of the merge commit; the Author when empty.
	Committer Identity
	// Message of the merge commit; "Merge <source> into <target>" when empty.
	Message string
	// ExpectedSourceSHA, when set, is the commit the caller checked on the source branch. The merge
	// fails with ErrSourceMoved if the branch is elsewhere, so an unchecked commit is never merged.
	ExpectedSourceSHA string
	// Now stamps the merge commit; time.Now when nil.
	Now func() time.Time
}

// MergeResult is the outcome of a merge.
type MergeResult struct {
	Kind MergeKind
	// SHA is the target's commit after the merge.
	SHA string
	// SourceSHA is the source commit merged.
	SourceSHA string
	// TargetSHA is the target's commit before the merge ("" when the target did not exist).
	TargetSHA string
}

// Merge merges branch source into branch target as last fetched, in the cache only: nothing is
// pushed. See MergeAndPush for what the merge does.
func (r *Repository) Merge(source, target string, opts MergeOptions) (MergeResult, error) {
	srcRef, dstRef, err := mergeRefs(source, target)
	if err != nil {
		return MergeResult{}, err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	dst, err := refValue(r.sh.sto, trackingRef(dstRef))
	if err != nil {
		return MergeResult{}, err
	}
	return r.mergeLocked(srcRef, dstRef, dst, opts)
}

// MergeAndPush merges branch source into branch target and pushes the result, only if the target
// is still at expectedTargetSHA ("" meaning it must not exist yet).
//
// When target is an ancestor of source the target fast-forwards to it. Otherwise a merge commit is
// made with parents (target, source) and the tree of source, whatever target holds: a proposed
// branch of hydrated manifests is the complete desired state of its environment, so a merge that
// combined both trees could only bring back what the hydrator removed. If target already contains
// source, nothing is pushed (MergeUpToDate): so a merge repeated after a crash never merges twice.
//
// The first attempt uses the branches as last fetched. If the push loses a race (ErrStale), both
// branches are fetched again and the merge is redone on the new target, up to retries more
// times; with opts.ExpectedSourceSHA set, a source that moved meanwhile stops it with
// ErrSourceMoved.
func (r *Repository) MergeAndPush(ctx context.Context, source, target, expectedTargetSHA string, retries int, opts MergeOptions) (MergeResult, error) {
	srcRef, dstRef, err := mergeRefs(source, target)
	if err != nil {
		return MergeResult{}, err
	}
	var expected plumbing.Hash
	if expectedTargetSHA != "" {
		if expected, err = parseSHA(expectedTargetSHA); err != nil {
			return MergeResult{}, err
		}
	}

	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	for attempt := 0; ; attempt++ {
		res, err := r.mergeLocked(srcRef, dstRef, expected, opts)
		if err != nil || res.Kind == MergeUpToDate {
			return res, err
		}
		err = r.pushLocked(ctx, dstRef, plumbing.NewHash(res.SHA), expected)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, ErrStale) || attempt >= retries {
			return MergeResult{}, err
		}
		err = r.fetchLocked(ctx, map[plumbing.ReferenceName]bool{srcRef: true, dstRef: true, r.notesRef: true})
		var missing *BranchNotFoundError
		if err != nil && !(errors.As(err, &missing) && len(missing.Branches) == 1 && missing.Branches[0] == dstRef.Short()) {
			return MergeResult{}, err
		}
		if expected, err = refValue(r.sh.sto, trackingRef(dstRef)); err != nil {
			return MergeResult{}, err
		}
	}
}

// mergeRefs are the references of the source and target branches of a merge.
func mergeRefs(source, target string) (plumbing.ReferenceName, plumbing.ReferenceName, error) {
	srcRef, err := branchRef(source)
	if err != nil {
		return "", "", err
	}
	dstRef, err := branchRef(target)
	return srcRef, dstRef, err
}

// mergeLocked merges the fetched source into the target commit dst (zero: no target yet).
func (r *Repository) mergeLocked(srcRef, dstRef plumbing.ReferenceName, dst plumbing.Hash, opts MergeOptions) (MergeResult, error) {
	sto := r.sh.sto
	src, err := refValue(sto, trackingRef(srcRef))
	if err != nil {
		return MergeResult{}, err
	}
	if src.IsZero() {
		return MergeResult{}, fmt.Errorf("merge %s into %s: %w", srcRef.Short(), dstRef.Short(), &BranchNotFoundError{Branches: []string{srcRef.Short()}})
	}
	if opts.ExpectedSourceSHA != "" && src.String() != opts.ExpectedSourceSHA {
		return MergeResult{}, fmt.Errorf("merge %s into %s: %w: it is at %s, not the expected %s",
			srcRef.Short(), dstRef.Short(), ErrSourceMoved, text.ShortSHA(src.String()), text.ShortSHA(opts.ExpectedSourceSHA))
	}
	res := MergeResult{SourceSHA: src.String()}
	if dst.IsZero() {
		res.Kind, res.SHA = MergeFastForward, src.String()
		return res, nil
	}
	res.TargetSHA = dst.String()

	if contained, err := isAncestor(sto, src, dst); err != nil {
		return MergeResult{}, fmt.Errorf("merge %s into %s: %w", srcRef.Short(), dstRef.Short(), err)
	} else if contained {
		res.Kind, res.SHA = MergeUpToDate, dst.String()
		return res, nil
	}
	if ff, err := isAncestor(sto, dst, src); err != nil {
		return MergeResult{}, fmt.Errorf("merge %s into %s: %w", srcRef.Short(), dstRef.Short(), err)
	} else if ff {
		res.Kind, res.SHA = MergeFastForward, src.String()
		return res, nil
	}

	srcCommit, err := object.GetCommit(sto, src)
	if err != nil {
		return MergeResult{}, notInCache(src, err)
	}
	when := stamp(opts.Now)
	author := opts.Author.signature(when)
	committer := author
	if opts.Committer != (Identity{}) {
		committer = opts.Committer.signature(when)
	}
	msg := opts.Message
	if msg == "" {
		msg = fmt.Sprintf("Merge %s into %s\n\nPromotes %s onto %s.\n", srcRef.Short(), dstRef.Short(), src, dst)
	}
	h, err := gitobj.WriteCommit(sto, &object.Commit{
		Author:       author,
		Committer:    committer,
		Message:      msg,
		TreeHash:     srcCommit.TreeHash,
		ParentHashes: []plumbing.Hash{dst, src},
	})
	if err != nil {
		return MergeResult{}, fmt.Errorf("write merge commit: %w", err)
	}
	res.Kind, res.SHA = MergeCommit, h.String()
	return res, nil
}
