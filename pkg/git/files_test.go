package git_test

import (
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
)

func yamlOnly(name string) bool { return strings.HasSuffix(name, ".yaml") }

func TestFetchTagPeelsAnnotatedTagsAndFollowsMovedTags(t *testing.T) {
	f := newFixture(t)
	v1 := f.remote.CommitFiles(t, "main", map[string]string{"deploy/app.yaml": "v: 1\n"}, "v1\n")
	v2 := f.remote.CommitFiles(t, "main", map[string]string{"deploy/app.yaml": "v: 2\n"}, "v2\n")
	f.remote.SetRef(t, "refs/tags/light", v1)
	bare, err := gogit.PlainOpen(f.remote.Dir)
	require.NoError(t, err)
	when := gittest.Signature(time.Unix(1_700_000_000, 0))
	_, err = bare.CreateTag("v2.0.0", plumbing.NewHash(v2), &gogit.CreateTagOptions{Tagger: &when, Message: "release v2.0.0\n"})
	require.NoError(t, err)

	repo := f.open(t)
	got, err := repo.FetchTag(ctx(t), "light")
	require.NoError(t, err)
	require.Equal(t, v1, got)
	got, err = repo.FetchTag(ctx(t), "refs/tags/v2.0.0")
	require.NoError(t, err)
	require.Equal(t, v2, got, "the annotated tag is peeled to its commit")

	f.remote.SetRef(t, "refs/tags/light", v2)
	got, err = repo.FetchTag(ctx(t), "light")
	require.NoError(t, err)
	require.Equal(t, v2, got, "a moved tag is followed")

	_, err = repo.FetchTag(ctx(t), "v9")
	require.ErrorIs(t, err, git.ErrTagNotFound)
	_, err = repo.FetchTag(ctx(t), "bad..name")
	require.Error(t, err)
}

func TestReadFilesReadsAFolderOfACommit(t *testing.T) {
	f := newFixture(t)
	sha := f.remote.CommitFiles(t, "main", map[string]string{
		"README.md":            "# not a manifest\n",
		"deploy/app.yaml":      "kind: A\n",
		"deploy/crds/crd.yaml": "kind: CRD\n",
		"deploy/notes.txt":     "skip\n",
		"other/elsewhere.yaml": "kind: B\n",
	}, "files\n")
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "main"))

	files, err := repo.ReadFiles(sha, "deploy", yamlOnly, 1<<20)
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"app.yaml": []byte("kind: A\n"), "crds/crd.yaml": []byte("kind: CRD\n")}, files)

	files, err = repo.ReadFiles(sha, "/deploy/", yamlOnly, 1<<20)
	require.NoError(t, err)
	require.Len(t, files, 2, "leading and trailing slashes do not matter")

	root, err := repo.ReadFiles(sha, "", yamlOnly, 1<<20)
	require.NoError(t, err)
	require.Len(t, root, 3)

	_, err = repo.ReadFiles(sha, "missing", yamlOnly, 1<<20)
	require.ErrorIs(t, err, git.ErrPathNotFound)
	_, err = repo.ReadFiles(sha, "deploy", yamlOnly, 10)
	require.ErrorContains(t, err, "over 10 bytes")

	onMain, err := repo.IsOnBranch("main", sha)
	require.NoError(t, err)
	require.True(t, onMain)
}
