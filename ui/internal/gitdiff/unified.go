package gitdiff

import (
	"bufio"
	"bytes"
	"strings"

	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
)

// unified renders a patch as go-git's unified diff encoder does, as lines without the file
// headers (the page names each file itself).
func unified(p fdiff.Patch) ([]Line, error) {
	var buf bytes.Buffer
	if err := fdiff.NewUnifiedEncoder(&buf, fdiff.DefaultContextLines).Encode(p); err != nil {
		return nil, err
	}
	var lines []Line
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	inHunk := false
	for sc.Scan() {
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "@@"):
			inHunk = true
			lines = append(lines, Line{Kind: "hunk", Text: text})
		case !inHunk:
			// diff --git, index, ---, +++ and mode lines: the page says the same above the file.
		case strings.HasPrefix(text, "+"):
			lines = append(lines, Line{Kind: "add", Text: text})
		case strings.HasPrefix(text, "-"):
			lines = append(lines, Line{Kind: "del", Text: text})
		default:
			lines = append(lines, Line{Kind: "context", Text: text})
		}
	}
	return lines, sc.Err()
}
