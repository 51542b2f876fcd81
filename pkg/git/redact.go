package git

import (
	"net/url"
	"regexp"
	"strings"
)

const redacted = "[redacted]"

// urlInText finds URLs inside free text such as a wrapped transport error.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// redactURL hides a password (or token) in the URL's userinfo and keeps the rest, so that a
// message still says which repository failed.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if err != nil && strings.Contains(raw, "@") && strings.Contains(raw, "://") {
			return redacted
		}
		return raw
	}
	return u.Redacted()
}

// redactText hides each secret and every URL password in s.
func redactText(s string, secrets []string) string {
	for _, secret := range secrets {
		// Very short values would mangle ordinary words and are no real credential anyway.
		if len(strings.TrimSpace(secret)) >= 4 {
			s = strings.ReplaceAll(s, secret, redacted)
		}
	}
	return urlInText.ReplaceAllStringFunc(s, redactURL)
}
