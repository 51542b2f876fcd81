package git_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

func TestCommitFilesCreatesAndExtendsABranch(t *testing.T) {
	f := newFixture(t)
	repo := f.open(t)
	require.ErrorIs(t, repo.Fetch(ctx(t), "main"), git.ErrBranchNotFound)

	first, err := repo.CommitFiles(ctx(t), git.CommitRequest{
		Branch:  "main",
		Files:   map[string][]byte{"values.yaml": []byte("replicas: 1\n"), "charts/app/Chart.yaml": []byte("name: app\n")},
		Message: "first\n",
	})
	require.NoError(t, err)
	second, err := repo.CommitFiles(ctx(t), git.CommitRequest{
		Branch:  "main",
		Files:   map[string][]byte{"values.yaml": []byte("replicas: 2\n")},
		Delete:  []string{"charts"},
		Message: "second\n",
		Author:  git.Identity{Name: "Dev", Email: "dev@example.com"},
	})
	require.NoError(t, err)

	assert.Equal(t, second, f.remote.Branch(t, "main"))
	c := f.remote.ReadCommit(t, second)
	assert.Equal(t, first, c.ParentHashes[0].String())
	assert.Equal(t, "Dev", c.Author.Name)
	tree, err := c.Tree()
	require.NoError(t, err)
	values, err := tree.File("values.yaml")
	require.NoError(t, err)
	content, err := values.Contents()
	require.NoError(t, err)
	assert.Equal(t, "replicas: 2\n", content)
	_, err = tree.File("charts/app/Chart.yaml")
	assert.Error(t, err, "deleted")
	f.remote.CheckConnectivity(t)
}

func TestCommitFilesReplaceWritesACompleteRendering(t *testing.T) {
	f := newFixture(t)
	f.remote.CommitFiles(t, "dev-next", map[string]string{"old.yaml": "gone after the next render"}, "render 1\n")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "dev-next"))

	sha, err := repo.CommitFiles(ctx(t), git.CommitRequest{
		Branch: "dev-next", Replace: true, Message: "render 2\n",
		Files: map[string][]byte{"new.yaml": []byte("kind: ConfigMap\n"), "hydrator.metadata": git.HydratorNote(dry(2))},
	})
	require.NoError(t, err)

	tree, err := f.remote.ReadCommit(t, sha).Tree()
	require.NoError(t, err)
	var names []string
	for _, e := range tree.Entries {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"hydrator.metadata", "new.yaml"}, names)
	got, err := repo.DrySHA(sha)
	require.NoError(t, err)
	assert.Equal(t, dry(2), got.SHA)
}

func TestCommitFilesOnAStaleBranch(t *testing.T) {
	f := newFixture(t)
	f.remote.CommitFiles(t, "main", map[string]string{"a": "1"}, "one\n")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "main"))
	moved := f.remote.CommitFiles(t, "main", map[string]string{"a": "2"}, "someone else\n")

	_, err := repo.CommitFiles(ctx(t), git.CommitRequest{Branch: "main", Files: map[string][]byte{"a": []byte("3")}, Message: "mine\n"})

	assert.ErrorIs(t, err, git.ErrStale)
	assert.Equal(t, moved, f.remote.Branch(t, "main"))
}

func TestAddNoteIsReadBack(t *testing.T) {
	f := newFixture(t)
	hydrated := f.hydrated(t, "dev-next", dry(1), "one")
	other := f.hydrated(t, "dev-next", dry(2), "two")
	writer := f.open(t)
	require.NoError(t, writer.Fetch(ctx(t), "dev-next"))

	require.NoError(t, writer.AddNote(ctx(t), hydrated, git.HydratorNote(dry(5)), git.Identity{}))
	require.NoError(t, writer.AddNote(ctx(t), other, git.HydratorNote(dry(6)), git.Identity{}))
	require.NoError(t, writer.AddNote(ctx(t), hydrated, git.HydratorNote(dry(7)), git.Identity{}))

	// Another process reading the repository from scratch.
	reader, err := f.newCache(t).Open(f.remote.URL(), git.Auth{}, git.Options{})
	require.NoError(t, err)
	require.NoError(t, reader.Fetch(ctx(t), "dev-next"))
	for sha, want := range map[string]string{hydrated: dry(7), other: dry(6)} {
		got, err := reader.DrySHA(sha)
		require.NoError(t, err)
		assert.Equal(t, git.DryCommit{SHA: want, Source: git.DrySourceNote}, got)
	}
	assert.NotEmpty(t, f.remote.Ref(t, git.DefaultNotesRef))
}

func TestCreateBranch(t *testing.T) {
	f := newFixture(t)
	base := f.hydrated(t, "main", dry(1), "one")
	other := f.hydrated(t, "main", dry(2), "two")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "main"))

	require.NoError(t, repo.CreateBranch(ctx(t), "dev", base))
	require.NoError(t, repo.CreateBranch(ctx(t), "dev", base), "creating it again at the same commit is a no-op")
	assert.Equal(t, base, f.remote.Branch(t, "dev"))
	assert.ErrorIs(t, repo.CreateBranch(ctx(t), "dev", other), git.ErrStale)
}
