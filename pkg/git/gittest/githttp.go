package gittest

import (
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
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
