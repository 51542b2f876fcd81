package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
)

const csrfCookie = "sluice_csrf"

// csrfGuard is the double-submit defence: every form carries the value of a cookie that only
// this origin can read, and a POST whose form and cookie differ, or that a browser says came
// from another site, is refused.
type csrfGuard struct{}

// token returns the request's token, setting a new cookie when it has none.
func (csrfGuard) token(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 64 {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return v
}

// check reports whether a POST carries the cookie's token and comes from this origin.
func (csrfGuard) check(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) != 64 {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) == 1
}
