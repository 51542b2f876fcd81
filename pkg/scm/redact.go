package scm

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
)

const redacted = "[redacted]"

// sensitiveQuery are query parameters that carry credentials in some SCM APIs.
var sensitiveQuery = []string{
	"access_token", "private_token", "token", "client_secret", "password", "sig", "signature", "jwt", "key",
}

// urlInText finds URLs inside free text such as a wrapped net/http error.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// authHeaderInText finds "Bearer xyz" or "token xyz" fragments echoed by servers.
var authHeaderInText = regexp.MustCompile(`(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)

// RedactURL returns u as a string with its password and credential-bearing query values hidden.
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		c.User = url.User(redacted)
	}
	if c.RawQuery != "" {
		q := c.Query()
		changed := false
		for k := range q {
			if isSensitiveParam(k) {
				q.Set(k, redacted)
				changed = true
			}
		}
		if changed {
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}

func isSensitiveParam(k string) bool {
	k = strings.ToLower(k)
	for _, s := range sensitiveQuery {
		if k == s {
			return true
		}
	}
	return false
}

// Redactor hides known secrets, URL credentials and authorization values in text.
type Redactor struct {
	secrets []string
}

// NewRedactor returns a Redactor that also hides each non-empty secret verbatim.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		// Very short values would mangle ordinary words; they are not credentials anyway.
		if len(s) >= 4 {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so a secret containing another is hidden whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// String returns s with secrets hidden.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, secret := range r.secrets {
			s = strings.ReplaceAll(s, secret, redacted)
		}
	}
	s = urlInText.ReplaceAllStringFunc(s, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return redacted
		}
		return RedactURL(u)
	})
	return authHeaderInText.ReplaceAllString(s, "$1 "+redacted)
}
