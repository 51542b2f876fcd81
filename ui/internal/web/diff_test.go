package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/ui/internal/gitdiff"
)

func TestDiffErrorsSayWhatBoundWasReached(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tc := range []struct {
		err    error
		status int
		says   string
	}{
		{&gitdiff.TooLargeError{Limit: 128 << 20}, http.StatusRequestEntityTooLarge, "Diff too large: the branches hold more than 128 MiB"},
		{timedOut(expired, errors.New("fetch: context deadline exceeded"), gitdiff.Limits{Timeout: 30 * time.Second}), http.StatusGatewayTimeout, "Timed out: the diff took longer than 30s"},
		{fmt.Errorf("%w: abc is not on the branches read", gitdiff.ErrUnknownCommit), http.StatusNotFound, "abc is not on the branches read"},
		{&readRefusal{http.StatusForbidden, "You may not read Secret team/creds"}, http.StatusForbidden, "You may not read Secret team/creds"},
		{errors.New("connection refused"), http.StatusBadGateway, "Cannot read the repository: connection refused"},
	} {
		status, msg := diffError(tc.err)
		assert.Equal(t, tc.status, status, tc.says)
		assert.Contains(t, msg, tc.says)
	}
}

func TestTheDiffPageShowsLinesAndWhatItLeftOut(t *testing.T) {
	pages, err := parsePages()
	require.NoError(t, err)
	data := diffData{Heading: "Hydrated manifests", From: "aaaaaaaaaa", To: "bbbbbbbbbb", Back: "/pipelines/team/web",
		Result: gitdiff.Result{Omitted: 3, TooLarge: "more than 200 files changed", Files: []gitdiff.File{
			{Name: "web.yaml", Status: "modified", Lines: []gitdiff.Line{{Kind: "hunk", Text: "@@ -1 +1 @@"}, {Kind: "add", Text: "+image: <web:2>"}}},
			{Name: "logo.png", Status: "added", Binary: true},
		}}}
	var buf bytes.Buffer
	require.NoError(t, pages["diff"].ExecuteTemplate(&buf, "layout", page{Title: "diff", Data: data}))
	for _, w := range []string{`data-file="web.yaml"`, `<span class="line add">&#43;image: &lt;web:2&gt;</span>`, "Binary file: not shown.",
		"Diff too large: more than 200 files changed; 3 more files are not shown", "2 changed files shown, 3 more not shown"} {
		assert.Contains(t, buf.String(), w)
	}
}

func TestAtMostTwoDiffsAreReadAtOnce(t *testing.T) {
	var releases []func()
	for range cap(diffSlots) {
		release, err := takeDiffSlot(context.Background())
		require.NoError(t, err)
		releases = append(releases, release)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := takeDiffSlot(ctx)
	status, msg := diffError(err)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, msg, "Busy: 2 diffs are being read already")
	releases[0]()
	release, err := takeDiffSlot(context.Background())
	require.NoError(t, err, "a slot freed is taken again")
	release()
	releases[1]()
}
