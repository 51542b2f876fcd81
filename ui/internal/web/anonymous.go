package web

import (
	"net/http"
	"strings"
)

// refuseAnonymous answers a request that names nobody when anonymous reading is off, and
// reports whether it did. Local mode always names its user; a proxy names the people it signed
// in; anything else (a port-forward to the pod, a pod that curls the Service) is anonymous.
// The embedded assets are no one's data: the sign-in pages use them.
func (s *Server) refuseAnonymous(w http.ResponseWriter, r *http.Request) bool {
	if s.AnonymousRead || strings.HasPrefix(r.URL.Path, "/assets/") {
		return false
	}
	if _, known := s.Identify.Identify(r); known {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(anonymousOffPage))
	return true
}

const anonymousOffPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sluice UI: sign in first</title></head>
<body><h1>Sign in first</h1>
<p>This Sluice UI shows nothing to anonymous visitors. Open it through the sign-in its operator
set up (an authenticating proxy), or run it on your own machine with <code>kubectl sluice
ui</code>, which shows what your kubeconfig may read. Anonymous reading is an opt-in:
<code>sluice-ui --anonymous=read</code> (chart value <code>identity.anonymous: read</code>).</p>
</body></html>
`
