// Package gittest serves real git repositories from the test process, over smart HTTP and SSH,
// with go-git's server side: no git binary is needed. On top of go-git it does what a real git
// server does and go-git's server leaves out: it honours the client's "have" lines, so fetches
// are incremental, and it updates refs as compare-and-swap, so a push whose old value is stale is
// rejected the way git rejects it ("cannot lock ref").
package gittest

import (
	"compress/gzip"
	"crypto/subtle"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Server holds bare repositories in a temporary folder and serves them.
type Server struct {
	root string
	http *httptest.Server
	user string
	pass string
	tls  bool

	mu         sync.Mutex
	locks      map[string]*sync.RWMutex
	beforeLock func(repo string)

	adverts  atomic.Int64
	uploads  atomic.Int64
	receives atomic.Int64
}

// Advertisements counts the ref advertisements for fetching (upload-pack), over HTTP and SSH:
// every fetch starts with one, whether or not it then asks for objects, so this is the number
// of fetches (and polls) the server answered.
func (s *Server) Advertisements() int64 { return s.adverts.Load() }

// Uploads counts the fetch requests that asked for objects (upload-pack requests past the ref
// advertisement), over HTTP and SSH.
func (s *Server) Uploads() int64 { return s.uploads.Load() }

// Receives counts the pushes that reached the server.
func (s *Server) Receives() int64 { return s.receives.Load() }

// Option configures a Server.
type Option func(*Server)

// WithBasicAuth makes every HTTP request require these credentials.
func WithBasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.pass = user, password }
}

// WithTLS serves HTTPS with a self-signed certificate; see CACert.
func WithTLS() Option {
	return func(s *Server) { s.tls = true }
}

// CACert is the PEM certificate a client must trust to reach a WithTLS server.
func (s *Server) CACert() []byte {
	if s.http.Certificate() == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.http.Certificate().Raw})
}

// NewServer starts an HTTP server for a new, empty set of repositories. It stops with the test.
func NewServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := StartServer(tb.TempDir(), opts...)
	tb.Cleanup(s.Close)
	return s
}

// StartServer starts an HTTP server for the repositories in root, for callers whose server must
// outlive one test function (a benchmark reused across its runs). Close stops it.
func StartServer(root string, opts ...Option) *Server {
	s := &Server{root: root, locks: map[string]*sync.RWMutex{}}
	for _, o := range opts {
		o(s)
	}
	if s.tls {
		s.http = httptest.NewTLSServer(s)
	} else {
		s.http = httptest.NewServer(s)
	}
	return s
}

// Close stops the server.
func (s *Server) Close() { s.http.Close() }

// URL is the HTTP clone URL of the repository name.
func (s *Server) URL(name string) string {
	return s.http.URL + "/" + name + ".git"
}

// BeforeRefUpdate installs f, called by every push after the client has read the refs and before
// the server takes its ref lock. A test moves a branch from f to lose a race on purpose.
func (s *Server) BeforeRefUpdate(f func(repo string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeLock = f
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// CreateRepo initialises an empty bare repository served as name.
func (s *Server) CreateRepo(tb testing.TB, name string) *Repo {
	tb.Helper()
	if !repoName.MatchString(name) || strings.HasPrefix(name, ".") {
		tb.Fatalf("repository name %q must be a plain name", name)
	}
	dir := filepath.Join(s.root, name+".git")
	if _, err := gogit.PlainInit(dir, true); err != nil {
		tb.Fatalf("init %s: %v", dir, err)
	}
	return &Repo{Name: name, Dir: dir, srv: s}
}

// ImportRepo serves a copy of the bare repository at src as name.
func (s *Server) ImportRepo(tb testing.TB, name, src string) *Repo {
	tb.Helper()
	if !repoName.MatchString(name) || strings.HasPrefix(name, ".") {
		tb.Fatalf("repository name %q must be a plain name", name)
	}
	dir := filepath.Join(s.root, name+".git")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		tb.Fatalf("copy %s: %v", src, err)
	}
	return &Repo{Name: name, Dir: dir, srv: s}
}

// Repo returns the served repository name, which must exist.
func (s *Server) Repo(tb testing.TB, name string) *Repo {
	tb.Helper()
	dir, err := s.repoDir(name)
	if err != nil {
		tb.Fatal(err)
	}
	return &Repo{Name: name, Dir: dir, srv: s}
}

func (s *Server) repoDir(name string) (string, error) {
	if !repoName.MatchString(name) || strings.HasPrefix(name, ".") {
		return "", transport.ErrRepositoryNotFound
	}
	dir := filepath.Join(s.root, name+".git")
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return "", transport.ErrRepositoryNotFound
	}
	return dir, nil
}

// lock serialises every ref update of one repository, like git's ref lock files.
func (s *Server) lock(repo string) func() {
	l := s.repoLock(repo)
	l.Lock()
	return l.Unlock
}

// rlock keeps ref updates out while a request reads refs: go-git rewrites a ref file in place,
// so a read racing a push could see it empty ("ref file is empty") where git's rename never
// shows a half-written ref.
func (s *Server) rlock(repo string) func() {
	l := s.repoLock(repo)
	l.RLock()
	return l.RUnlock
}

func (s *Server) repoLock(repo string) *sync.RWMutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.locks[repo]
	if !ok {
		l = &sync.RWMutex{}
		s.locks[repo] = l
	}
	return l
}

func (s *Server) hook(repo string) {
	s.mu.Lock()
	f := s.beforeLock
	s.mu.Unlock()
	if f != nil {
		f(repo)
	}
}

// ServeHTTP implements git's smart HTTP protocol (stateless RPC).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.user != "" || s.pass != "" {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(s.pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}
	name, action, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ".git/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	dir, err := s.repoDir(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = gz
	}

	switch {
	case r.Method == http.MethodGet && action == "info/refs":
		service := r.URL.Query().Get("service")
		if service != transport.UploadPackServiceName && service != transport.ReceivePackServiceName {
			http.Error(w, "only the smart protocol is served", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", fmt.Sprintf("application/x-%s-advertisement", service))
		w.Header().Set("Cache-Control", "no-cache")
		err = s.advertise(name, dir, service, w, true)
	case r.Method == http.MethodPost && action == transport.UploadPackServiceName:
		w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
		err = s.uploadPack(r.Context(), name, dir, body, w)
	case r.Method == http.MethodPost && action == transport.ReceivePackServiceName:
		w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
		err = s.receivePack(r.Context(), name, dir, body, w)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		// The status line is already sent; the client sees a broken stream.
		fmt.Fprintf(os.Stderr, "gittest: %s %s: %v\n", r.Method, r.URL.Path, err)
	}
}
