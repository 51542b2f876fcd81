package gate

import "unicode/utf8"

// truncate cuts s to at most n bytes without splitting a character, marking the cut with "...".
// TODO(shape): use the shared truncate in pkg once it lands on main; this is the minimal local copy.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	if n <= len(mark) {
		return mark[:max(n, 0)]
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// Truncate is truncate for the gate-controller, which copies gate messages into other objects.
func Truncate(s string, n int) string { return truncate(s, n) }
