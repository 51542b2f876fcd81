// Package gitdiff shows what changed between two commits of a hydrated branch, and between two
// manifest snapshots, as per-file unified diffs, with go-git. Everything it does is bounded: a
// fetch brings at most Limits.FetchBytes of objects into memory and runs under a deadline, and a
// diff shows at most Limits.Files files and Limits.PatchBytes of text, saying what it left out.
//
// It reads a repository with the credentials its caller gives, and keeps nothing: the UI reads
// them as the person who asks (docs/architecture.md, "The UI's diffs"), so no request reads with
// a credential another person's request brought.
package gitdiff

import (
	"errors"
	"fmt"
	"time"
)

// Limits bound one diff. The zero value means the defaults.
type Limits struct {
	// FetchBytes is the most object bytes a fetch may hold in memory: DefaultFetchBytes.
	FetchBytes int64
	// Files is the most changed files shown: DefaultFiles.
	Files int
	// PatchBytes is the most bytes of diff text shown: DefaultPatchBytes.
	PatchBytes int
	// FileBytes is the largest file (either side) diffed line by line: DefaultFileBytes.
	FileBytes int64
	// Timeout bounds the whole fetch and diff: DefaultTimeout.
	Timeout time.Duration
}

const (
	// DefaultFetchBytes holds a hydrated branch of a few thousand manifests with some history.
	DefaultFetchBytes = 128 << 20
	// DefaultFiles is more than a person reads in one page.
	DefaultFiles = 200
	// DefaultPatchBytes keeps the page light enough for a browser to render at once.
	DefaultPatchBytes = 1 << 20
	// DefaultFileBytes bounds the line diff of one file, which costs time with the lines' count.
	DefaultFileBytes = 2 << 20
	// DefaultTimeout is longer than a fetch from a busy SCM usually takes, shorter than a person
	// waits for a page.
	DefaultTimeout = 30 * time.Second
)

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.FetchBytes <= 0 {
		l.FetchBytes = DefaultFetchBytes
	}
	if l.Files <= 0 {
		l.Files = DefaultFiles
	}
	if l.PatchBytes <= 0 {
		l.PatchBytes = DefaultPatchBytes
	}
	if l.FileBytes <= 0 {
		l.FileBytes = DefaultFileBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// ErrTooLarge is a repository whose branches hold more than Limits.FetchBytes.
var ErrTooLarge = errors.New("too large to diff")

// TooLargeError says which bound a fetch reached.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the branches hold more than %d MiB of objects, the most the UI fetches for a diff: compare the commits on the SCM or with git", e.Limit>>20)
}

// Is matches ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }
