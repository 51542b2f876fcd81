// Package text holds the small string helpers every Sluice module shares, so each has one
// definition: commit ids in messages, and text cut to fit an API's length limit.
package text

import "unicode/utf8"

// ShortSHALength is how many characters of a commit id ShortSHA keeps: git log --oneline's
// default, unique enough in a message and the same in every message, status and Event.
const ShortSHALength = 7

// ShortSHA abbreviates a commit id for messages; a shorter string is returned as it is.
func ShortSHA(sha string) string {
	if len(sha) > ShortSHALength {
		return sha[:ShortSHALength]
	}
	return sha
}

// Ellipsis marks where Truncate and TruncateBytes cut a string: one character, three bytes.
const Ellipsis = "…"

// Truncate returns s cut to at most maxChars characters (Unicode code points), the last of them
// Ellipsis when it was cut. Characters, because that is what limits count: an API's maxLength
// (a condition message's 32768, a CRD field's), GitHub's 140 for a status description. It never
// splits a UTF-8 character, so the result stays valid text, and it reads at most maxChars+1
// characters of s, whatever its length.
func Truncate(s string, maxChars int) string {
	if len(s) <= maxChars {
		return s // no character is shorter than a byte
	}
	if maxChars <= 0 {
		return ""
	}
	chars, keep := 0, 0
	for i := range s {
		if chars == maxChars-1 {
			keep = i
		}
		if chars == maxChars {
			return s[:keep] + Ellipsis
		}
		chars++
	}
	return s
}

// TruncateBytes is Truncate for a limit in bytes, such as an annotation's share of the 256 KiB
// all annotations of an object may hold: at most maxBytes bytes, never a split character, the
// Ellipsis included when s was cut (or only whole characters when even that does not fit).
func TruncateBytes(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	cut, mark := maxBytes-len(Ellipsis), Ellipsis
	if cut < 0 {
		cut, mark = max(maxBytes, 0), ""
	}
	// Back to the first byte of a character: at most three steps on valid UTF-8.
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
