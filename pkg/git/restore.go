package git

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sluicehq/sluice/pkg/git/gitobj"
	"github.com/sluicehq/sluice/pkg/text"
)

var (
	// ErrNotDeployed means no commit in the first-parent history of an environment branch deploys
	// the dry SHA asked for: the environment never ran it (or ran it too long ago to look).
	ErrNotDeployed = errors.New("the dry SHA was never deployed to the branch")
	// ErrRevertBranchTaken means the revert branch holds a commit that is neither this revert's
	// nor merged into the environment branch, so moving it would drop that commit.
	ErrRevertBranchTaken = errors.New("the revert branch holds another, unmerged commit")
)

// maxMergeDepth bounds the walk through merge commits in search of a dry SHA.
const maxMergeDepth = 8

// noteRetries is how many times a note whose push lost a race (a hydrator noting its own
// commits meanwhile) is written again on the new notes commit.
const noteRetries = 5

// DeployedDrySHA returns the dry commit that environment commit sha deploys: its own hydrator
// note; else, for a merge commit (a promotion or a revert merged by an SCM, which writes no note),
// that of the commit it merged, its second parent, whose tree it took; else its metadata file.
func (r *Repository) DeployedDrySHA(sha string) (DryCommit, error) {
	for range maxMergeDepth {
		d, err := r.DrySHA(sha)
		if err == nil && d.Source == DrySourceNote {
			return d, nil
		}
		if err != nil && !errors.Is(err, ErrNoDrySHA) {
			return DryCommit{}, err
		}
		c, cerr := r.Commit(sha)
		if cerr != nil || len(c.Parents) < 2 {
			return d, err
		}
		sha = c.Parents[1]
	}
	return DryCommit{}, fmt.Errorf("merges nested deeper than %d under %s: %w", maxMergeDepth, text.ShortSHA(sha), ErrNoDrySHA)
}

// FindDeployed returns the newest commit in the first-parent history of branch (as last fetched),
// looking at most limit commits back, that deploys drySHA (see DeployedDrySHA). The first-parent
// history is what the environment ran, one commit after the other; the proposed commits merged
// into it are not. The error wraps ErrNotDeployed when there is none.
func (r *Repository) FindDeployed(branch, drySHA string, limit int) (string, error) {
	sha, err := r.Resolve(branch)
	if err != nil {
		return "", err
	}
	for range limit {
		d, err := r.DeployedDrySHA(sha)
		if err != nil && !errors.Is(err, ErrNoDrySHA) {
			return "", err
		}
		if err == nil && d.SHA == drySHA {
			return sha, nil
		}
		c, err := r.Commit(sha)
		if err != nil {
			return "", err
		}
		if len(c.Parents) == 0 {
			break
		}
		sha = c.Parents[0]
	}
	return "", fmt.Errorf("dry %s in the last %d commits of %s: %w", text.ShortSHA(drySHA), limit, branch, ErrNotDeployed)
}

// RestoreRequest is a revert of an environment branch to the tree of one of its earlier commits.
type RestoreRequest struct {
	// Branch is the environment branch; fetch it (and RevertBranch) first.
	Branch string
	// Restore is the commit of Branch's history whose tree the new commit takes.
	Restore string
	// RevertBranch receives the new commit; it may not exist yet.
	RevertBranch string
	// Onto, when set, is the environment commit the revert must be written on: Branch as fetched
	// must be there (else ErrStale), and a commit of this revert (its Marker) at the tip of
	// RevertBranch written on another environment commit is replaced, compare-and-swap, by one
	// written on Onto. Empty takes the branch as fetched and any commit of this revert.
	Onto string
	// Message of the new commit. It must contain Marker as a line of its own.
	Message string
	// Marker is a line only this revert's commit carries (a trailer with an id): a commit at the
	// tip of RevertBranch that has it is taken as this revert's, written by an earlier attempt.
	Marker string
	// Note is the hydrator note the new commit gets (see HydratorNoteFor).
	Note []byte
	// Author (and committer); DefaultIdentity when empty.
	Author Identity
	// When stamps the commit. Keep it fixed across attempts (the time the revert was asked for),
	// so a retry writes the very same commit.
	When time.Time
}

// RestoreResult is the revert commit.
type RestoreResult struct {
	// SHA is the revert commit.
	SHA string
	// Parent is the environment commit it was written on.
	Parent string
	// Existing is true when an earlier attempt had already pushed it.
	Existing bool
}

// Restore writes one commit on top of the environment branch whose tree is the tree of
// req.Restore: a whole, atomic return to that state, not a git revert of single commits. The
// commit gets req.Note in the notes ref, then is pushed to req.RevertBranch, each a
// compare-and-swap, never forced. The note goes first, so the commit never reaches the branch
// without it.
//
// It is safe to repeat after a crash at any step: a RevertBranch whose tip carries req.Marker is
// taken as done (its note is made sure of), and the same request on the same environment commit
// writes the same commit, so a note pushed before a crash is found and not written twice. A
// RevertBranch holding any other commit not merged into Branch fails with ErrRevertBranchTaken.
func (r *Repository) Restore(ctx context.Context, req RestoreRequest) (RestoreResult, error) {
	envRef, revRef, restore, err := parseRestoreRequest(req)
	if err != nil {
		return RestoreResult{}, err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	sto := r.sh.sto

	revTip, err := refValue(sto, trackingRef(revRef))
	if err != nil {
		return RestoreResult{}, err
	}
	own, earlier, err := r.earlierRestoreLocked(ctx, revTip, req)
	if err != nil || earlier != nil {
		return derefRestore(earlier), err
	}
	envTip, err := refValue(sto, trackingRef(envRef))
	if err != nil {
		return RestoreResult{}, err
	}
	if envTip.IsZero() {
		return RestoreResult{}, &BranchNotFoundError{Branches: []string{req.Branch}}
	}
	if own {
		if merged, err := isAncestor(sto, revTip, envTip); err != nil {
			return RestoreResult{}, err
		} else if merged {
			c, _ := object.GetCommit(sto, revTip)
			return RestoreResult{SHA: revTip.String(), Parent: c.ParentHashes[0].String(), Existing: true}, nil
		}
	}
	if req.Onto != "" && envTip.String() != req.Onto {
		return RestoreResult{}, fmt.Errorf("%s is at %s, not %s: %w", req.Branch, text.ShortSHA(envTip.String()), text.ShortSHA(req.Onto), ErrStale)
	}
	h, err := r.writeRestoreLocked(envTip, restore, req)
	if err != nil {
		return RestoreResult{}, err
	}
	if err := r.publishRestoreLocked(ctx, req, revRef, h, revTip, own); err != nil {
		return RestoreResult{}, err
	}
	return RestoreResult{SHA: h.String(), Parent: envTip.String()}, nil
}

// parseRestoreRequest checks what a Restore needs before it takes the lock.
func parseRestoreRequest(req RestoreRequest) (envRef, revRef plumbing.ReferenceName, restore plumbing.Hash, err error) {
	if envRef, err = branchRef(req.Branch); err != nil {
		return "", "", plumbing.ZeroHash, err
	}
	if revRef, err = branchRef(req.RevertBranch); err != nil {
		return "", "", plumbing.ZeroHash, err
	}
	if restore, err = parseSHA(req.Restore); err != nil {
		return "", "", plumbing.ZeroHash, err
	}
	if req.Marker == "" || !hasLine(req.Message, req.Marker) {
		return "", "", plumbing.ZeroHash, fmt.Errorf("the revert message must carry its marker %q as a line", req.Marker)
	}
	return envRef, revRef, restore, nil
}

// earlierRestoreLocked looks at the revert branch's tip: own tells whether an earlier attempt
// of this revert wrote it, and a result is returned when that attempt already did the work
// asked for (its note made sure of).
func (r *Repository) earlierRestoreLocked(ctx context.Context, revTip plumbing.Hash, req RestoreRequest) (own bool, done *RestoreResult, err error) {
	if revTip.IsZero() {
		return false, nil, nil
	}
	c, err := object.GetCommit(r.sh.sto, revTip)
	if err != nil {
		return false, nil, notInCache(revTip, err)
	}
	own = hasLine(c.Message, req.Marker) && len(c.ParentHashes) > 0
	if own && (req.Onto == "" || c.ParentHashes[0].String() == req.Onto) {
		res := RestoreResult{SHA: revTip.String(), Parent: c.ParentHashes[0].String(), Existing: true}
		return true, &res, r.ensureNoteLocked(ctx, revTip, req.Note)
	}
	return own, nil, nil
}

func derefRestore(res *RestoreResult) RestoreResult {
	if res == nil {
		return RestoreResult{}
	}
	return *res
}

// publishRestoreLocked puts the note on h, then h on the revert branch, each a compare-and-swap
// against revTip.
func (r *Repository) publishRestoreLocked(ctx context.Context, req RestoreRequest, revRef plumbing.ReferenceName, h, revTip plumbing.Hash, own bool) error {
	if !own && !revTip.IsZero() {
		if ok, err := isAncestor(r.sh.sto, revTip, h); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%s is at %s, which is not merged into %s: %w",
				req.RevertBranch, text.ShortSHA(revTip.String()), req.Branch, ErrRevertBranchTaken)
		}
	}
	if err := r.ensureNoteLocked(ctx, h, req.Note); err != nil {
		return err
	}
	if own {
		// This revert's own commit, written on an environment commit the branch has left: the
		// new one replaces it, compare-and-swap, since the old one was never merged.
		return r.swapLocked(ctx, revRef, h, revTip)
	}
	return r.pushLocked(ctx, revRef, h, revTip)
}

// writeRestoreLocked writes the revert commit into the cache, after checking that restore is in
// the environment's history.
func (r *Repository) writeRestoreLocked(envTip, restore plumbing.Hash, req RestoreRequest) (plumbing.Hash, error) {
	sto := r.sh.sto
	if ok, err := isAncestor(sto, restore, envTip); err != nil {
		return plumbing.ZeroHash, err
	} else if !ok {
		return plumbing.ZeroHash, fmt.Errorf("%s is not in the history of %s: %w", text.ShortSHA(restore.String()), req.Branch, ErrNotOnBranch)
	}
	old, err := object.GetCommit(sto, restore)
	if err != nil {
		return plumbing.ZeroHash, notInCache(restore, err)
	}
	sig := req.Author.signature(req.When)
	h, err := gitobj.WriteCommit(sto, &object.Commit{
		Author: sig, Committer: sig, Message: req.Message, TreeHash: old.TreeHash, ParentHashes: []plumbing.Hash{envTip},
	})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write the revert commit: %w", err)
	}
	return h, nil
}

// ensureNoteLocked makes the note of target in the notes ref equal content, writing it on the
// notes commit as last fetched, and fetching again when a concurrent writer won the race.
func (r *Repository) ensureNoteLocked(ctx context.Context, target plumbing.Hash, content []byte) error {
	for attempt := 0; ; attempt++ {
		// Each attempt reads the storage anew: a fetch of a large pack reopens it.
		sto := r.sh.sto
		parent, err := refValue(sto, trackingRef(r.notesRef))
		if err != nil {
			return err
		}
		if !parent.IsZero() {
			have, found, err := gitobj.ReadNote(sto, parent, target)
			if err != nil {
				return err
			}
			if found && bytes.Equal(have, content) {
				return nil
			}
		}
		note, err := gitobj.WriteNote(sto, parent, target, content, DefaultIdentity.signature(time.Now()), "Notes added by Sluice: revert\n")
		if err != nil {
			return fmt.Errorf("note on %s: %w", text.ShortSHA(target.String()), err)
		}
		err = r.pushLocked(ctx, r.notesRef, note, parent)
		if err == nil || !errors.Is(err, ErrStale) || attempt >= noteRetries {
			return err
		}
		if err := r.fetchLocked(ctx, map[plumbing.ReferenceName]bool{r.notesRef: true}); err != nil {
			return err
		}
	}
}

// HydratorNoteFor returns the hydrator note of a commit that deploys dry commit d, keeping what
// the hydrator recorded about it (repository, author, date, subject, body).
func HydratorNoteFor(d DryCommit) []byte {
	b, _ := json.Marshal(hydratorMetadata{DrySHA: d.SHA, RepoURL: d.RepoURL, Author: d.Author, Date: d.Date, Subject: d.Subject, Body: d.Body})
	return append(b, '\n')
}

// Trailer returns the value of the last "key: value" line of message, or "".
func Trailer(message, key string) string {
	var v string
	sc := bufio.NewScanner(strings.NewReader(message))
	for sc.Scan() {
		if k, rest, ok := strings.Cut(sc.Text(), ":"); ok && strings.EqualFold(strings.TrimSpace(k), key) {
			v = strings.TrimSpace(rest)
		}
	}
	return v
}

func hasLine(message, line string) bool {
	for _, l := range strings.Split(message, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}
