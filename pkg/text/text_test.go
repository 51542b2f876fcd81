package text

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestShortSHA(t *testing.T) {
	assert.Equal(t, "0123456", ShortSHA("0123456789abcdef0123456789abcdef01234567"))
	assert.Equal(t, "abc", ShortSHA("abc"))
	assert.Equal(t, "", ShortSHA(""))
}

func TestTruncate(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"fits", "hello", 5, "hello"},
		{"cut with the marker", "hello world", 6, "hello" + Ellipsis},
		{"counts characters, not bytes", "ééééé", 5, "ééééé"},
		{"never splits a character", "abcdé fgh", 5, "abcd" + Ellipsis},
		{"4-byte characters", strings.Repeat("🙂", 5), 3, "🙂🙂" + Ellipsis},
		{"room for the marker only", "hello", 1, Ellipsis},
		{"zero", "hello", 0, ""},
		{"negative", "hello", -1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.in, tc.max)
			assert.Equal(t, tc.want, got)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

// Every limit, on text mixing 1- to 4-byte characters, gives valid UTF-8 of at most that many
// characters, which starts with the input.
func TestTruncateAtEveryLimit(t *testing.T) {
	s := "a é ∑ 🙂 " + strings.Repeat("ü🙂∑x", 20)
	total := utf8.RuneCountInString(s)
	for n := 0; n <= total+1; n++ {
		got := Truncate(s, n)
		assert.True(t, utf8.ValidString(got), "limit %d", n)
		assert.Equal(t, min(n, total), utf8.RuneCountInString(got), "limit %d", n)
		assert.True(t, strings.HasPrefix(s, strings.TrimSuffix(got, Ellipsis)), "limit %d", n)
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("héllo wörld 🙂", 7)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		got := Truncate(s, n)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > max(n, 0) {
			t.Fatalf("Truncate(%q, %d) = %q", s, n, got)
		}
	})
}

func TestTruncateBytes(t *testing.T) {
	assert.Equal(t, "hello", TruncateBytes("hello", 5))
	assert.Equal(t, "hel"+Ellipsis, TruncateBytes("hello world", 6))
	// "é" is bytes 4-5: room for 5 bytes before the marker would split it.
	assert.Equal(t, "abcd"+Ellipsis, TruncateBytes("abcdé fgh", 8))
	assert.Equal(t, "h", TruncateBytes("héllo", 2), "no room for the marker")
	assert.Equal(t, "", TruncateBytes("héllo", 0))
	s := "a é ∑ 🙂 " + strings.Repeat("ü🙂∑x", 20)
	for n := -1; n <= len(s)+1; n++ {
		got := TruncateBytes(s, n)
		assert.True(t, utf8.ValidString(got), "limit %d", n)
		assert.LessOrEqual(t, len(got), max(n, 0), "limit %d", n)
		assert.True(t, strings.HasPrefix(s, strings.TrimSuffix(got, Ellipsis)), "limit %d", n)
	}
}
