package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAnonymousReadingIsAnOptIn(t *testing.T) {
	get := func(s *Server) *httptest.ResponseRecorder {
		h := s.guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/search?q=prod", nil))
		return w
	}
	w := get(&Server{Identify: Anonymous{}})
	assert.Equal(t, http.StatusUnauthorized, w.Code, "off by default")
	assert.Contains(t, w.Body.String(), "--anonymous=read")
	assert.Equal(t, http.StatusOK, get(&Server{Identify: Anonymous{}, AnonymousRead: true}).Code, "opted in")
	assert.Equal(t, http.StatusUnauthorized, get(&Server{Identify: sidecar}).Code, "a proxy-mode request that names nobody")
}
