package gittest

import (
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"

	gogit "github.com/go-git/go-git/v5"
)

// ErrNoGit means the git binary is not on PATH.
var ErrNoGit = errors.New("git is not on PATH")

// ServeWithGit serves the bare repository at dir over smart HTTP with git's own server, git
// http-backend, and returns its URL and a function that stops it. Pushes are allowed. It needs
// the git binary (ErrNoGit). Benchmarks use it so that the server side of a fetch or push costs
// what it costs on a real git host, and both clients under comparison meet the same server.
func ServeWithGit(dir string) (url string, stop func(), err error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", nil, ErrNoGit
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	srv := httptest.NewServer(&cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(dir),
			"GIT_HTTP_EXPORT_ALL=1",
			// http-backend enables receive-pack for authenticated users only.
			"REMOTE_USER=gittest",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + filepath.Dir(dir),
		},
	})
	return srv.URL + "/" + filepath.Base(dir), srv.Close, nil
}

// NewGitServedRepo creates an empty bare repository served by git http-backend (ServeWithGit)
// until the test ends, and returns it with its URL. Flux's source-controller needs git's own
// server: it clones shallow, which the go-git server of NewServer does not serve. Without the git
// binary the test fails.
func NewGitServedRepo(tb testing.TB, name string) (*Repo, string) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), name+".git")
	if _, err := gogit.PlainInit(dir, true); err != nil {
		tb.Fatalf("init %s: %v", dir, err)
	}
	url, stop, err := ServeWithGit(dir)
	if err != nil {
		tb.Fatalf("serve %s with git http-backend: %v", dir, err)
	}
	tb.Cleanup(stop)
	return OpenBare(dir), url
}
