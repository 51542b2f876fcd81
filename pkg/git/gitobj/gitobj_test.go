package gitobj_test

import (
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git/gitobj"
)

// files lists every file of the tree with its content.
func files(t *testing.T, s *memory.Storage, tree plumbing.Hash) map[string]string {
	t.Helper()
	tr, err := object.GetTree(s, tree)
	require.NoError(t, err)
	out := map[string]string{}
	require.NoError(t, tr.Files().ForEach(func(f *object.File) error {
		c, err := f.Contents()
		out[f.Name] = c
		return err
	}))
	return out
}

func TestWriteTree(t *testing.T) {
	s := memory.NewStorage()
	base, err := gitobj.WriteTree(s, plumbing.ZeroHash, gitobj.Changes{Write: map[string][]byte{
		"README.md":             []byte("readme"),
		"apps/web/deploy.yaml":  []byte("web"),
		"apps/web/service.yaml": []byte("svc"),
		"apps/api/deploy.yaml":  []byte("api"),
	}})
	require.NoError(t, err)

	for _, tc := range []struct {
		name    string
		changes gitobj.Changes
		want    map[string]string
	}{
		{
			name:    "overwrite and add",
			changes: gitobj.Changes{Write: map[string][]byte{"apps/web/deploy.yaml": []byte("web2"), "apps/db/x": []byte("db")}},
			want:    map[string]string{"README.md": "readme", "apps/web/deploy.yaml": "web2", "apps/web/service.yaml": "svc", "apps/api/deploy.yaml": "api", "apps/db/x": "db"},
		},
		{
			name:    "delete a directory, and the parent it empties",
			changes: gitobj.Changes{Delete: []string{"apps/api", "apps/web"}},
			want:    map[string]string{"README.md": "readme"},
		},
		{
			name:    "delete then write replaces a directory",
			changes: gitobj.Changes{Delete: []string{"apps/web"}, Write: map[string][]byte{"apps/web/only.yaml": []byte("only")}},
			want:    map[string]string{"README.md": "readme", "apps/web/only.yaml": "only", "apps/api/deploy.yaml": "api"},
		},
		{
			name:    "a file becomes a directory",
			changes: gitobj.Changes{Write: map[string][]byte{"README.md/inner": []byte("in")}},
			want:    map[string]string{"README.md/inner": "in", "apps/web/deploy.yaml": "web", "apps/web/service.yaml": "svc", "apps/api/deploy.yaml": "api"},
		},
		{
			name:    "deleting what is not there",
			changes: gitobj.Changes{Delete: []string{"nope/never"}},
			want:    map[string]string{"README.md": "readme", "apps/web/deploy.yaml": "web", "apps/web/service.yaml": "svc", "apps/api/deploy.yaml": "api"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := gitobj.WriteTree(s, base, tc.changes)
			require.NoError(t, err)
			assert.Equal(t, tc.want, files(t, s, h))
		})
	}

	same, err := gitobj.WriteTree(s, base, gitobj.Changes{Write: map[string][]byte{"README.md": []byte("readme")}})
	require.NoError(t, err)
	assert.Equal(t, base, same, "rewriting identical content yields the identical tree")
}

func TestWriteTreeRefusesBadPaths(t *testing.T) {
	s := memory.NewStorage()
	for _, p := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/.git/config", "trailing/"} {
		_, err := gitobj.WriteTree(s, plumbing.ZeroHash, gitobj.Changes{Write: map[string][]byte{p: nil}})
		assert.Error(t, err, "%q", p)
	}
	_, err := gitobj.WriteTree(s, plumbing.ZeroHash, gitobj.Changes{Write: map[string][]byte{"a": nil, "a/b": nil}})
	assert.ErrorContains(t, err, "as a file and as a directory")
}

func TestNotesFlatAndFannedOut(t *testing.T) {
	s := memory.NewStorage()
	sig := object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}
	target := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	fanned := plumbing.NewHash("fedcba9876543210fedcba9876543210fedcba98")

	notes, err := gitobj.WriteNote(s, plumbing.ZeroHash, target, []byte(`{"drySha":"a"}`), sig, "")
	require.NoError(t, err)
	// Lay out a second note as git does once a notes tree grows: fe/dc/<rest>.
	c, err := object.GetCommit(s, notes)
	require.NoError(t, err)
	tree, err := gitobj.WriteTree(s, c.TreeHash, gitobj.Changes{Write: map[string][]byte{
		"fe/dc/" + fanned.String()[4:]: []byte(`{"drySha":"b"}`),
	}})
	require.NoError(t, err)
	notes, err = gitobj.WriteCommit(s, &object.Commit{Author: sig, Committer: sig, Message: "fan out\n", TreeHash: tree, ParentHashes: []plumbing.Hash{notes}})
	require.NoError(t, err)

	got, found, err := gitobj.ReadNote(s, notes, target)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, `{"drySha":"a"}`, string(got))
	got, found, err = gitobj.ReadNote(s, notes, fanned)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, `{"drySha":"b"}`, string(got))
	_, found, err = gitobj.ReadNote(s, notes, plumbing.NewHash(strings.Repeat("ab", 20)))
	require.NoError(t, err)
	assert.False(t, found)

	// Replacing the fanned-out note keeps it where it is.
	notes, err = gitobj.WriteNote(s, notes, fanned, []byte(`{"drySha":"c"}`), sig, "")
	require.NoError(t, err)
	c, err = object.GetCommit(s, notes)
	require.NoError(t, err)
	paths := keys(files(t, s, c.TreeHash))
	assert.Equal(t, []string{target.String(), "fe/dc/" + fanned.String()[4:]}, paths)
	got, _, err = gitobj.ReadNote(s, notes, fanned)
	require.NoError(t, err)
	assert.Equal(t, `{"drySha":"c"}`, string(got))
}

func TestWriteBlobRoundTrip(t *testing.T) {
	s := memory.NewStorage()
	h, err := gitobj.WriteBlob(s, []byte("hello\n"))
	require.NoError(t, err)
	assert.Equal(t, "ce013625030ba8dba906f756967f9e9ca394464a", h.String(), "the hash git hash-object gives")
	b, err := object.GetBlob(s, h)
	require.NoError(t, err)
	r, err := b.Reader()
	require.NoError(t, err)
	content, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(content))
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
