package git

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/pkg/text"
)

var (
	// ErrStale means a compare-and-swap push was refused because the remote branch no longer has
	// the expected value. Fetch again, recompute, and retry.
	ErrStale = errors.New("the remote branch moved since it was read")
	// ErrBranchNotFound means the remote has no such branch.
	ErrBranchNotFound = errors.New("branch not found on the remote")
	// ErrSourceMoved means the source branch of a merge no longer points at the commit the caller
	// checked, so merging it would promote something unchecked.
	ErrSourceMoved = errors.New("the source branch moved away from the expected commit")
	// ErrNoDrySHA means a hydrated commit has neither a hydrator note nor a hydrator.metadata file.
	ErrNoDrySHA = errors.New("no dry SHA recorded for the commit")
	// ErrNotOnBranch means a commit is not reachable from the branch it was expected on.
	ErrNotOnBranch = errors.New("commit is not on the branch")
	// ErrAuthentication means the remote refused the credentials, or none were given and it
	// needs some.
	ErrAuthentication = errors.New("the remote refused the credentials")
	// ErrRepositoryNotFound means the remote has no repository at the URL (or hides it from
	// these credentials).
	ErrRepositoryNotFound = errors.New("repository not found at the URL")
	// ErrUnknownHostKey means the SSH server's host key is not in known_hosts.
	ErrUnknownHostKey = errors.New("the SSH host key is not in known_hosts")
	// ErrHostKeyMismatch means the SSH server offered a key other than the one known_hosts pins.
	ErrHostKeyMismatch = errors.New("the SSH host key does not match known_hosts")
)

// StaleError is the ErrStale of one branch: what the push expected, and what the remote has.
type StaleError struct {
	Branch   string
	Expected string
	// Actual is the remote's value, or "" when the branch is gone. It may be empty too when the
	// server rejected the update without saying.
	Actual string
}

func (e *StaleError) Error() string {
	actual := e.Actual
	if actual == "" {
		actual = "something else"
	}
	return fmt.Sprintf("push to %s refused: the remote branch is at %s, not the expected %s; fetch again and retry",
		e.Branch, text.ShortSHA(actual), describeExpected(e.Expected))
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

func describeExpected(sha string) string {
	if sha == "" {
		return "absence (a new branch)"
	}
	return text.ShortSHA(sha)
}

// BranchNotFoundError lists the requested branches the remote does not have.
type BranchNotFoundError struct {
	Branches []string
}

func (e *BranchNotFoundError) Error() string {
	return fmt.Sprintf("the remote has no branch %s", strings.Join(e.Branches, ", "))
}

// Is makes errors.Is(err, ErrBranchNotFound) true.
func (e *BranchNotFoundError) Is(target error) bool { return target == ErrBranchNotFound }

// remoteError is a failed network operation, worded without credentials. It unwraps to the
// package's sentinel for its kind and to the context's error, but never to go-git's error, whose
// text is not under this package's control.
type remoteError struct {
	msg  string
	kind error
	ctx  error
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.ctx != nil {
		errs = append(errs, e.ctx)
	}
	return errs
}

// shortSHA abbreviates a commit id for messages, as everywhere in Sluice (pkg/text).
func shortSHA(sha string) string { return text.ShortSHA(sha) }
