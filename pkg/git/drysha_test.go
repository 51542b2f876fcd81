package git_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

func TestDrySHAReadsTheNoteBeforeTheFile(t *testing.T) {
	f := newFixture(t)
	fileOnly := f.hydrated(t, "dev-next", dry(1), "one")
	// The hydrator re-rendered dry(3) to the same manifests as dry(2): only the note moved on.
	both := f.hydrated(t, "dev-next", dry(2), "two")
	f.remote.AddNote(t, git.DefaultNotesRef, both, string(git.HydratorNote(dry(3))))
	noteOnly := f.remote.DeleteFiles(t, "dev-next", "hydrator.metadata")
	f.remote.AddNote(t, git.DefaultNotesRef, noteOnly, `{"drySha": "`+dry(4)+`", "subject": "the dry change", "author": "Dev <dev@example.com>"}`)
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev-next"))

	for _, tc := range []struct {
		name   string
		sha    string
		dry    string
		source git.DrySource
	}{
		{"file only", fileOnly, dry(1), git.DrySourceFile},
		{"note and file", both, dry(3), git.DrySourceNote},
		{"note only", noteOnly, dry(4), git.DrySourceNote},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := repo.DrySHA(tc.sha)
			require.NoError(t, err)
			assert.Equal(t, tc.dry, got.SHA)
			assert.Equal(t, tc.source, got.Source)
		})
	}
	got, err := repo.DrySHA(noteOnly)
	require.NoError(t, err)
	assert.Equal(t, "the dry change", got.Subject)
	assert.Equal(t, "Dev <dev@example.com>", got.Author)
}

func TestDrySHAWithoutMetadata(t *testing.T) {
	f := newFixture(t)
	plain := f.remote.CommitFiles(t, "dev", map[string]string{"manifests/app.yaml": "x"}, "hand-made\n")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev"))

	_, err := repo.DrySHA(plain)
	assert.ErrorIs(t, err, git.ErrNoDrySHA)
}

func TestDrySHARejectsMalformedMetadata(t *testing.T) {
	f := newFixture(t)
	notJSON := f.remote.CommitFiles(t, "dev", map[string]string{"hydrator.metadata": "drySha: abc"}, "yaml, not json\n")
	notSHA := f.remote.CommitFiles(t, "dev", map[string]string{"hydrator.metadata": `{"drySha": "main"}`}, "a branch name\n")
	badNote := f.remote.CommitFiles(t, "dev", map[string]string{"hydrator.metadata": string(git.HydratorNote(dry(1)))}, "good file\n")
	f.remote.AddNote(t, git.DefaultNotesRef, badNote, "{")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev"))

	_, err := repo.DrySHA(notJSON)
	assert.ErrorContains(t, err, "not hydrator metadata JSON")
	_, err = repo.DrySHA(notSHA)
	assert.ErrorContains(t, err, `"main"`)
	_, err = repo.DrySHA(badNote)
	assert.ErrorContains(t, err, "note", "a broken note must not silently fall back to an older file")
}

func TestDrySHAWithCustomNotesRefAndMetadataPath(t *testing.T) {
	f := newFixture(t)
	sha := f.remote.CommitFiles(t, "dev", map[string]string{
		"apps/web/hydrator.metadata": string(git.HydratorNote(dry(1))),
	}, "path-scoped metadata\n")
	f.remote.AddNote(t, "refs/notes/custom", sha, string(git.HydratorNote(dry(2))))
	f.remote.AddNote(t, git.DefaultNotesRef, sha, string(git.HydratorNote(dry(3))))

	byFile, err := f.cache.Open(f.remote.URL(), git.Auth{}, git.Options{MetadataFile: "apps/web/hydrator.metadata", NotesRef: "refs/notes/absent"})
	require.NoError(t, err)
	require.NoError(t, byFile.Fetch(ctx(t), "dev"))
	got, err := byFile.DrySHA(sha)
	require.NoError(t, err)
	assert.Equal(t, git.DryCommit{SHA: dry(1), Source: git.DrySourceFile}, got)

	byNote, err := f.cache.Open(f.remote.URL(), git.Auth{}, git.Options{NotesRef: "refs/notes/custom"})
	require.NoError(t, err)
	require.NoError(t, byNote.Fetch(ctx(t), "dev"))
	got, err = byNote.DrySHA(sha)
	require.NoError(t, err)
	assert.Equal(t, dry(2), got.SHA)

	_, err = f.cache.Open(f.remote.URL(), git.Auth{}, git.Options{NotesRef: "refs/heads/main"})
	assert.ErrorContains(t, err, "refs/notes/")
}
