// Package scmtest has helpers for testing providers and controllers against in-process HTTPS
// servers that emulate an SCM's REST API.
package scmtest

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// Request is one request the fake SCM received.
type Request struct {
	Method string
	// Path is the escaped path, as sent on the wire.
	Path   string
	Query  string
	Header http.Header
	Body   string
}

// JSON decodes the request body into a map, failing the test if it is not JSON.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("request body of %s %s is not a JSON object: %v: %s", r.Method, r.Path, err, r.Body)
	}
	return m
}

// Server is a TLS server that records every request before handing it to a ServeMux.
type Server struct {
	*httptest.Server
	Mux *http.ServeMux
	// CAPEM is the PEM of the server's self-signed certificate, to pass as a CA bundle.
	CAPEM []byte

	mu       sync.Mutex
	requests []Request
}

// NewTLSServer starts a recording HTTPS server, closed when the test ends.
func NewTLSServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{Mux: http.NewServeMux()}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// Handshakes cut short when a test closes the server are expected noise.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	s.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return s
}

// ProviderConfig configures a provider for this server with creds. The limiter registry is the
// test's own, so no test waits on a rate limit budget another spent.
func (s *Server) ProviderConfig(t testing.TB, creds scm.Credentials) scm.Config {
	return scm.Config{
		Key:         "test/" + t.Name(),
		BaseURL:     s.URL,
		CABundle:    s.CAPEM,
		Credentials: creds,
		Limiters:    ratelimit.NewRegistry(),
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{
		Method: r.Method,
		Path:   r.URL.EscapedPath(),
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   string(body),
	})
	s.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.Mux.ServeHTTP(w, r)
}

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Reset forgets the recorded requests.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// WriteJSON answers with status and v encoded as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
