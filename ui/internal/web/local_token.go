package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
)

// NewLaunchToken returns a fresh random token for one launch of local mode: 32 bytes, hex.
func NewLaunchToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// admitter is an Identifier that lets a request in or answers it itself (Local: the launch
// token).
type admitter interface {
	admit(w http.ResponseWriter, r *http.Request) bool
}

// admit lets in a request that carries the launch token: in its cookie, or once in the URL
// (?token=, as the URL printed at start carries it), which is exchanged for the cookie and
// redirected to the same URL without it, so the token leaves the address bar and the history.
// Anything else is answered 401 with how to get in. A Local without a token admits nobody.
func (l Local) admit(w http.ResponseWriter, r *http.Request) bool {
	name := l.cookieName(r.Host)
	if c, err := r.Cookie(name); err == nil && l.matches(c.Value) {
		return true
	}
	q := r.URL.Query()
	if !q.Has("token") || !l.matches(q.Get("token")) || r.Method != http.MethodGet {
		refuseWithoutToken(w)
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: l.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	q.Del("token")
	clean := *r.URL
	clean.RawQuery = q.Encode()
	clean.Scheme, clean.Host = "", ""
	if clean.Path == "" {
		clean.Path = "/"
	}
	http.Redirect(w, r, clean.RequestURI(), http.StatusSeeOther)
	return false
}

func (l Local) matches(v string) bool {
	return l.Token != "" && subtle.ConstantTimeCompare([]byte(v), []byte(l.Token)) == 1
}

// cookieName holds the port: cookies are not scoped by port, and two local UIs on one machine
// must not overwrite each other's.
func (Local) cookieName(host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return "sluice_ui_" + port
	}
	return "sluice_ui"
}

const withoutTokenPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sluice UI: open the URL it printed</title></head>
<body><h1>Open the URL this UI printed when it started</h1>
<p>This UI runs in local mode, with the kubeconfig of whoever started it, so it lets in only a
browser that carries its launch token. Open the URL that <code>sluice-ui</code> or
<code>kubectl sluice ui</code> printed at start (it ends in <code>?token=…</code>); the token
is then kept in a cookie of this browser.</p></body></html>
`

func refuseWithoutToken(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(withoutTokenPage))
}
