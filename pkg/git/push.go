package git

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"

	"github.com/sluicehq/sluice/pkg/text"
)

// ErrNotFastForward means a push would drop commits from the remote branch, which only a force
// push can do; this package never force pushes.
var ErrNotFastForward = errors.New("the new commit does not contain the branch's current commit")

// Push moves branch on the remote to newSHA, only if the remote branch is still at
// expectedOldSHA ("" meaning the branch must not exist yet): a compare-and-swap on the ref.
//
// The check happens twice, as with git push --force-with-lease: against the refs the remote
// advertises, and again by the server under its ref lock, because the update carries
// expectedOldSHA as its old value. Either way a moved branch fails with a *StaleError (errors.Is
// ErrStale): fetch, recompute and retry. newSHA must contain expectedOldSHA (ErrNotFastForward
// otherwise): nothing is ever force pushed. Pushing a branch that is already at newSHA succeeds
// without sending anything, so a retried push after a lost reply is harmless.
func (r *Repository) Push(ctx context.Context, branch, newSHA, expectedOldSHA string) error {
	ref, err := branchRef(branch)
	if err != nil {
		return err
	}
	next, err := parseSHA(newSHA)
	if err != nil {
		return err
	}
	var old plumbing.Hash
	if expectedOldSHA != "" {
		if old, err = parseSHA(expectedOldSHA); err != nil {
			return err
		}
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	return r.pushLocked(ctx, ref, next, old)
}

func (r *Repository) pushLocked(ctx context.Context, ref plumbing.ReferenceName, next, old plumbing.Hash) error {
	sto := r.sh.sto
	if ok, err := hasCommit(sto, next); !ok {
		return fmt.Errorf("push %s: %w", ref.Short(), notInCache(next, err))
	}
	if !old.IsZero() {
		ff, err := isAncestor(sto, old, next)
		if err != nil {
			return fmt.Errorf("push %s: %w", ref.Short(), err)
		}
		if !ff {
			return fmt.Errorf("refusing to push %s to %s: %w %s, so pushing would drop commits",
				text.ShortSHA(next.String()), ref.Short(), ErrNotFastForward, text.ShortSHA(old.String()))
		}
	}
	return r.swapLocked(ctx, ref, next, old)
}

// swapLocked moves ref from old to next on the remote only while it is at old (compare-and-swap),
// whether or not next descends from old. Only a caller that owns every commit it drops may use it
// directly (a revert replacing its own unmerged commit); others push through pushLocked.
func (r *Repository) swapLocked(ctx context.Context, ref plumbing.ReferenceName, next, old plumbing.Hash) error {
	sto := r.sh.sto
	if ok, err := hasCommit(sto, next); !ok {
		return fmt.Errorf("push %s: %w", ref.Short(), notInCache(next, err))
	}
	sess, err := r.receivePackSession()
	if err != nil {
		return r.remoteErr(ctx, "push to", err)
	}
	defer sess.Close()
	ar, advertised, err := advertisedRefs(ctx, sess)
	if err != nil {
		return r.remoteErr(ctx, "push to", err)
	}
	current := advertised[ref]
	if current == next {
		return sto.SetReference(plumbing.NewHashReference(trackingRef(ref), next))
	}
	if current != old {
		return r.stale(ref, old, current)
	}

	known := make([]plumbing.Hash, 0, len(advertised))
	for _, h := range advertised {
		known = append(known, h)
	}
	objects, err := objectsToPush(sto, next, known)
	if err != nil {
		return fmt.Errorf("push %s: list the objects to send: %w", ref.Short(), err)
	}

	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: next}}
	pr, pw := io.Pipe()
	req.Packfile = pr
	encoded := make(chan error, 1)
	go func() {
		useRefDeltas := !ar.Capabilities.Supports(capability.OFSDelta)
		_, err := packfile.NewEncoder(pw, sto, useRefDeltas).Encode(objects, 10)
		encoded <- err
		_ = pw.CloseWithError(err)
	}()
	report, err := sess.ReceivePack(ctx, req)
	_ = pr.Close()
	if encErr := <-encoded; encErr != nil && err == nil {
		err = encErr
	}
	if err == nil && report != nil {
		err = report.Error()
	}
	if err != nil {
		return r.explainRefusal(ctx, ref, old, next, err)
	}
	return sto.SetReference(plumbing.NewHashReference(trackingRef(ref), next))
}

// explainRefusal reads the branch again after a failed push. Servers word a lost race in many
// ways ("stale info", "cannot lock ref", "fetch first"); the branch's value says what happened.
func (r *Repository) explainRefusal(ctx context.Context, ref plumbing.ReferenceName, old, next plumbing.Hash, pushErr error) error {
	refused := r.remoteErr(ctx, "push to", pushErr)
	if ctx.Err() != nil {
		return refused
	}
	sess, err := r.uploadSession()
	if err != nil {
		return refused
	}
	defer sess.Close()
	_, advertised, err := advertisedRefs(ctx, sess)
	if err != nil {
		return refused
	}
	switch current := advertised[ref]; current {
	case next:
		// The update landed and only the reply was lost.
		return r.sh.sto.SetReference(plumbing.NewHashReference(trackingRef(ref), next))
	case old:
		return refused
	default:
		return r.stale(ref, old, current)
	}
}

func (r *Repository) stale(ref plumbing.ReferenceName, old, current plumbing.Hash) error {
	e := &StaleError{Branch: ref.Short()}
	if !old.IsZero() {
		e.Expected = old.String()
	}
	if !current.IsZero() {
		e.Actual = current.String()
	}
	return e
}
