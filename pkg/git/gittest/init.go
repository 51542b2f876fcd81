package gittest

import (
	"fmt"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"
)

// InitRepo creates an empty bare repository served as name and returns its clone URL. It is
// CreateRepo for callers without a testing.TB, such as the demo, which serves its repository
// from a StartServer server for a whole run.
func (s *Server) InitRepo(name string) (string, error) {
	if !repoName.MatchString(name) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("repository name %q must be a plain name", name)
	}
	if _, err := gogit.PlainInit(filepath.Join(s.root, name+".git"), true); err != nil {
		return "", fmt.Errorf("init repository %s: %w", name, err)
	}
	return s.URL(name), nil
}
