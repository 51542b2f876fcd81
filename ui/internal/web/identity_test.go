package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLocalAnswersOnlyOnLoopbackHosts(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1:8092": true, "localhost:8092": true, "[::1]:8092": true, "evil.example:8092": false, "10.0.0.1": false} {
		assert.Equal(t, want, Local{}.AllowsHost(host), host)
	}
}

func TestCSRFNeedsTheCookiesTokenFromTheSameOrigin(t *testing.T) {
	var g csrfGuard
	w := httptest.NewRecorder()
	token := g.token(w, httptest.NewRequest("GET", "/", nil))
	cookie := w.Result().Cookies()[0]
	post := func(formToken, site string, withCookie bool) *http.Request {
		r := httptest.NewRequest("POST", "/act/x/ns/n", strings.NewReader(url.Values{"csrf": {formToken}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		if withCookie {
			r.AddCookie(cookie)
		}
		return r
	}
	assert.True(t, g.check(post(token, "same-origin", true)))
	assert.True(t, g.check(post(token, "", true)), "an older browser without Sec-Fetch-Site")
	assert.False(t, g.check(post(token, "cross-site", true)), "another site's form")
	assert.False(t, g.check(post(strings.Repeat("0", 64), "same-origin", true)), "a guessed token")
	assert.False(t, g.check(post(token, "same-origin", false)), "no cookie")
}

func TestProxyHeadersAreBelievedOnTheProxySocketOnly(t *testing.T) {
	p := Proxy{UserHeader: "X-Forwarded-User", GroupsHeader: "X-Forwarded-Groups"}
	identify := func(wrap func(http.Handler) http.Handler) (id Identity, known bool) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		r.Header.Set("X-Forwarded-User", "alice")
		r.Header.Set("X-Forwarded-Groups", "devs")
		wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { id, known = p.Identify(r) })).ServeHTTP(httptest.NewRecorder(), r)
		return id, known
	}

	_, ok := identify(func(h http.Handler) http.Handler { return h })
	assert.False(t, ok, "from loopback (where a port-forward arrives), not on the socket: anonymous")
	id, ok := identify(ViaProxySocket)
	assert.True(t, ok, "on the proxy's socket: the user it names")
	assert.Equal(t, Identity{User: "alice", Groups: []string{"devs"}, Impersonate: true}, id)
}
