// Package text shortens what the promoter copies into messages, titles and status fields.
package text

import "unicode/utf8"

// ShortSHA is the first 7 characters of a commit id, as git shows it.
func ShortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// Truncate cuts s to at most n bytes, ending in "..." when cut, without splitting a character.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return s[:0]
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// OrDash is s, or "-" when s is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
