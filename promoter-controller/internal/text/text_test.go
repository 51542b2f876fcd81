package text

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTruncateKeepsRunesWhole(t *testing.T) {
	assert.Equal(t, "short", Truncate("short", 10))
	for n := 4; n < 20; n++ {
		out := Truncate(strings.Repeat("é", 20), n)
		assert.LessOrEqual(t, len(out), n)
		assert.True(t, strings.HasSuffix(out, "..."))
		assert.True(t, utf8.ValidString(out), out)
	}
	assert.Equal(t, "abcdefg", ShortSHA("abcdefg0123"))
	assert.Equal(t, "abc", ShortSHA("abc"))
}
