package git_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/git"
)

// dryHistory builds a dry branch main: c0..c4 in a line, with c5 merging a feature commit made
// from c2, and a commit elsewhere that main never saw.
type dryHistory struct {
	line    []string
	feature string
	merge   string
	other   string
}

func newDryHistory(t *testing.T, f *fixture) dryHistory {
	t.Helper()
	var h dryHistory
	for i := range 5 {
		h.line = append(h.line, f.remote.CommitFiles(t, "main", map[string]string{"values.yaml": fmt.Sprint(i)}, fmt.Sprintf("change %d\n", i)))
		if i == 2 {
			f.remote.SetBranch(t, "feature", h.line[2])
			h.feature = f.remote.CommitFiles(t, "feature", map[string]string{"feature.yaml": "on"}, "feature\n")
		}
	}
	c4 := f.remote.ReadCommit(t, h.line[4])
	h.merge = f.remote.MergeCommit(t, "main", c4.TreeHash.String(), h.line[4], h.feature)
	h.other = f.remote.CommitFiles(t, "elsewhere", map[string]string{"x": "y"}, "unrelated\n")
	return h
}

func TestIsAncestor(t *testing.T) {
	f := newFixture(t)
	h := newDryHistory(t, f)
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "main", "elsewhere"))

	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"itself", h.line[3], h.line[3], true},
		{"parent", h.line[2], h.line[3], true},
		{"far back", h.line[0], h.merge, true},
		{"through the merged side", h.feature, h.merge, true},
		{"child is not an ancestor", h.line[3], h.line[2], false},
		{"sibling", h.feature, h.line[4], false},
		{"unrelated histories", h.other, h.merge, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := repo.IsAncestor(tc.a, tc.b)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := repo.IsAncestor("main", h.line[0])
	assert.ErrorContains(t, err, "40 hex")
}

func TestCompareOnBranch(t *testing.T) {
	f := newFixture(t)
	h := newDryHistory(t, f)
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "main", "elsewhere"))

	for _, tc := range []struct {
		x, y string
		want git.Order
	}{
		{h.line[4], h.line[1], git.OrderAfter},
		{h.line[1], h.line[4], git.OrderBefore},
		{h.merge, h.feature, git.OrderAfter},
		{h.line[3], h.line[3], git.OrderSame},
		{h.feature, h.line[4], git.OrderUnrelated},
	} {
		got, err := repo.CompareOnBranch("main", tc.x, tc.y)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s vs %s", tc.x[:7], tc.y[:7])
	}
	after, err := repo.IsAfter("main", h.line[4], h.line[3])
	require.NoError(t, err)
	assert.True(t, after)
	after, err = repo.IsAfter("main", h.line[3], h.line[3])
	require.NoError(t, err)
	assert.False(t, after, "a commit is not after itself")

	_, err = repo.CompareOnBranch("main", h.other, h.line[0])
	assert.ErrorIs(t, err, git.ErrNotOnBranch)
	_, err = repo.CompareOnBranch("release", h.line[1], h.line[0])
	assert.ErrorIs(t, err, git.ErrBranchNotFound)
}

func TestLog(t *testing.T) {
	f := newFixture(t)
	h := newDryHistory(t, f)
	repo := f.open(t)
	require.NoError(t, repo.Fetch(ctx(t), "main"))

	log, err := repo.Log("main", 3)

	require.NoError(t, err)
	require.Len(t, log, 3)
	assert.Equal(t, []string{h.merge, h.line[4], h.line[3]}, []string{log[0].SHA, log[1].SHA, log[2].SHA}, "newest first, by commit time")
	assert.Equal(t, "change 4", log[1].Subject)
	assert.Equal(t, []string{h.line[4], h.feature}, log[0].Parents)

	all, err := repo.Log("main", 100)
	require.NoError(t, err)
	assert.Len(t, all, 7)
	_, err = repo.Log("main", 0)
	assert.Error(t, err)
}
