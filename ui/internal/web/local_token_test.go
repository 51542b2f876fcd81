package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// localGuard is the guard of a local-mode server in front of a handler that answers 200.
func localGuard(token string) http.Handler {
	s := &Server{Identify: Local{User: "alice", Token: token}}
	return s.guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
}

func serve(h http.Handler, method, target, host string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Host = host
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestLocalModeRefusesARequestWithoutTheLaunchToken(t *testing.T) {
	h := localGuard("s3cret")
	for _, target := range []string{"/pipelines", "/events", "/assets/ui.css", "/pipelines?token=guess", "/?token="} {
		w := serve(h, "GET", target, "127.0.0.1:8092")
		assert.Equal(t, http.StatusUnauthorized, w.Code, target)
		assert.Contains(t, w.Body.String(), "Open the URL this UI printed when it started", target)
		assert.Empty(t, w.Result().Cookies(), target)
	}
	w := serve(h, "POST", "/act/close-gate/team/freeze", "127.0.0.1:8092", &http.Cookie{Name: "sluice_ui_8092", Value: "wrong"})
	assert.Equal(t, http.StatusUnauthorized, w.Code, "a wrong cookie")
	assert.Equal(t, http.StatusUnauthorized, serve(localGuard(""), "GET", "/?token=", "127.0.0.1:8092").Code, "no token, nobody in")
}

func TestLocalModeTradesTheTokenForACookieAndCleansTheURL(t *testing.T) {
	h := localGuard("s3cret")
	w := serve(h, "GET", "/gates?q=prod&token=s3cret", "127.0.0.1:8092")
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/gates?q=prod", w.Header().Get("Location"), "the token leaves the address bar")
	cookies := w.Result().Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	assert.Equal(t, "sluice_ui_8092", c.Name)
	assert.True(t, c.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)

	assert.Equal(t, http.StatusOK, serve(h, "GET", "/gates?q=prod", "127.0.0.1:8092", c).Code, "the cookie lets the browser in")
	assert.Equal(t, http.StatusUnauthorized, serve(h, "GET", "/gates", "127.0.0.1:8093", c).Code, "another port's UI has its own cookie")
	w = serve(h, "GET", "/?token=s3cret", "localhost:8092")
	assert.Equal(t, "/", w.Header().Get("Location"))
}

func TestLocalModeRefusesAnotherHostEvenWithTheToken(t *testing.T) {
	h := localGuard("s3cret")
	c := &http.Cookie{Name: "sluice_ui_8092", Value: "s3cret"}
	for _, host := range []string{"evil.example:8092", "10.0.0.5:8092"} {
		assert.Equal(t, http.StatusMisdirectedRequest, serve(h, "GET", "/pipelines", host, c).Code, host)
		assert.Equal(t, http.StatusMisdirectedRequest, serve(h, "GET", "/?token=s3cret", host).Code, host)
	}
}
