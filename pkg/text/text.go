// Package text holds the small string helpers every Sluice module shares, so each has one
// definition: commit ids in messages, and text cut to fit an API's length limit.
package text

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

// Ellipsis marks where Truncate cut a string: one character.
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
