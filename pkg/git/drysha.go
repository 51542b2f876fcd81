package git

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sluicehq/sluice/pkg/git/gitobj"
	"github.com/sluicehq/sluice/pkg/text"
)

// DrySource says where a dry SHA was read from.
type DrySource string

const (
	// DrySourceNote: the hydrator note attached to the commit.
	DrySourceNote DrySource = "note"
	// DrySourceFile: the hydrator metadata file in the commit.
	DrySourceFile DrySource = "file"
)

// DryCommit is what a hydrated commit says about the dry commit it was rendered from.
type DryCommit struct {
	// SHA is the dry commit.
	SHA string
	// Source is where SHA was read.
	Source DrySource
	// These are copied from the metadata when the hydrator wrote them (Argo CD's source hydrator
	// does); they describe the dry commit.
	RepoURL string
	Author  string
	Date    string
	Subject string
	Body    string
}

// hydratorMetadata is the JSON written by Argo CD's source hydrator, both in the
// hydrator.metadata file and in the refs/notes/hydrator.metadata note.
type hydratorMetadata struct {
	DrySHA  string `json:"drySha"`
	RepoURL string `json:"repoURL"`
	Author  string `json:"author"`
	Date    string `json:"date"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// DrySHA returns the dry commit the hydrated commit sha was rendered from. It reads the hydrator
// note first (as of the last Fetch), then the metadata file: a hydrator that re-renders a dry
// commit to identical manifests only moves the note, so the note is the newer word. The error
// wraps ErrNoDrySHA when the commit has neither.
func (r *Repository) DrySHA(sha string) (DryCommit, error) {
	h, err := parseSHA(sha)
	if err != nil {
		return DryCommit{}, err
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	sto := r.sh.sto

	notes, err := refValue(sto, trackingRef(r.notesRef))
	if err != nil {
		return DryCommit{}, err
	}
	if !notes.IsZero() {
		content, found, err := gitobj.ReadNote(sto, notes, h)
		if err != nil {
			return DryCommit{}, fmt.Errorf("read the %s note of %s: %w", r.notesRef, text.ShortSHA(sha), err)
		}
		if found {
			return parseDry(content, DrySourceNote, fmt.Sprintf("the %s note of %s", r.notesRef, text.ShortSHA(sha)))
		}
	}

	c, err := object.GetCommit(sto, h)
	if err != nil {
		return DryCommit{}, notInCache(h, err)
	}
	f, err := c.File(r.metadataFile)
	if errors.Is(err, object.ErrFileNotFound) {
		return DryCommit{}, fmt.Errorf("commit %s has no %s note and no %s file: %w",
			text.ShortSHA(sha), r.notesRef, r.metadataFile, ErrNoDrySHA)
	}
	if err != nil {
		return DryCommit{}, fmt.Errorf("read %s of %s: %w", r.metadataFile, text.ShortSHA(sha), err)
	}
	if f.Size > gitobj.MaxNoteSize {
		return DryCommit{}, fmt.Errorf("%s of %s is %d bytes, too large for hydrator metadata", r.metadataFile, text.ShortSHA(sha), f.Size)
	}
	rd, err := f.Reader()
	if err != nil {
		return DryCommit{}, err
	}
	defer rd.Close()
	content, err := io.ReadAll(rd)
	if err != nil {
		return DryCommit{}, fmt.Errorf("read %s of %s: %w", r.metadataFile, text.ShortSHA(sha), err)
	}
	return parseDry(content, DrySourceFile, fmt.Sprintf("%s of %s", r.metadataFile, text.ShortSHA(sha)))
}

func parseDry(content []byte, source DrySource, where string) (DryCommit, error) {
	var m hydratorMetadata
	if err := json.Unmarshal(content, &m); err != nil {
		return DryCommit{}, fmt.Errorf("%s is not hydrator metadata JSON: %w", where, err)
	}
	m.DrySHA = strings.ToLower(strings.TrimSpace(m.DrySHA))
	if m.DrySHA == "" {
		return DryCommit{}, fmt.Errorf("%s has no drySha: %w", where, ErrNoDrySHA)
	}
	if !plumbing.IsHash(m.DrySHA) {
		return DryCommit{}, fmt.Errorf("%s has drySha %q, which is not a full commit SHA", where, m.DrySHA)
	}
	return DryCommit{
		SHA: m.DrySHA, Source: source,
		RepoURL: m.RepoURL, Author: m.Author, Date: m.Date, Subject: m.Subject, Body: m.Body,
	}, nil
}

// HydratorNote returns note content naming drySHA, in the format Argo CD's source hydrator writes.
func HydratorNote(drySHA string) []byte {
	b, _ := json.Marshal(hydratorMetadata{DrySHA: drySHA})
	return append(b, '\n')
}
