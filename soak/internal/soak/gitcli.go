package soak

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/pkg/git"
)

// gitCLI is a bare repository of the git command line, where the hydrator of a strategy on
// Gitea writes the commits pkg/git does not write: a proposal with two parents.
type gitCLI struct {
	dir string
	// remote is the clone URL with the credentials in it (for git only, never logged).
	remote string
}

func newGitCLI(ctx context.Context, dir, remote string) (*gitCLI, error) {
	g := &gitCLI{dir: dir, remote: remote}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := g.run(ctx, nil, "init", "--quiet", "--bare"); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *gitCLI) run(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+filepath.Join(g.dir, "soak-index"),
		"GIT_AUTHOR_NAME=hydrator", "GIT_AUTHOR_EMAIL=hydrator@example.com",
		"GIT_COMMITTER_NAME=hydrator", "GIT_COMMITTER_EMAIL=hydrator@example.com", "GIT_TERMINAL_PROMPT=0")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.ReplaceAll(stderr.String(), g.remote, "<remote>"))
	}
	return strings.TrimSpace(out.String()), nil
}

// proposeOnEnvironment writes the hydrated commit of dry on next with the environment's tip as
// its first parent and the last proposal as its second, and pushes it as a compare-and-swap on
// next. The environment moved past the proposal (a revert, Gitea's merge commit): written on the
// old proposal, the new one would conflict with the environment in Gitea's merge; written on the
// environment alone, the push would not be a fast-forward of next. Its first-parent history is
// the environment's, as if started again from it.
func (h *hydrator) proposeOnEnvironment(ctx context.Context, env, next, tip, last, dry, msg string) error {
	g := h.cli
	if _, err := g.run(ctx, nil, "fetch", "--quiet", "--no-tags", g.remote, "+refs/heads/"+env+":refs/soak/env", "+refs/heads/"+next+":refs/soak/next"); err != nil {
		return err
	}
	for ref, want := range map[string]string{"refs/soak/env": tip, "refs/soak/next": last} {
		if got, err := g.run(ctx, nil, "rev-parse", ref); err != nil || got != want {
			return fmt.Errorf("%s moved while proposing (%s, not %s): %v", ref, short(got), short(want), err)
		}
	}
	if _, err := g.run(ctx, nil, "read-tree", tip); err != nil {
		return err
	}
	files := map[string][]byte{"app.yaml": manifest(h.strategy, dry, msg), git.DefaultMetadataFile: git.HydratorNote(dry)}
	for path, content := range files {
		blob, err := g.run(ctx, content, "hash-object", "-w", "--stdin")
		if err != nil {
			return err
		}
		if _, err := g.run(ctx, nil, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+path); err != nil {
			return err
		}
	}
	tree, err := g.run(ctx, nil, "write-tree")
	if err != nil {
		return err
	}
	sha, err := g.run(ctx, nil, "commit-tree", tree, "-p", tip, "-p", last, "-m", msg)
	if err != nil {
		return err
	}
	if _, err := g.run(ctx, nil, "push", "--quiet", "--force-with-lease=refs/heads/"+next+":"+last, g.remote, sha+":refs/heads/"+next); err != nil {
		return err
	}
	if err := h.repo.Fetch(ctx, next); err != nil {
		return err
	}
	return h.repo.AddNote(ctx, sha, git.HydratorNote(dry), git.Identity{Name: "hydrator", Email: "hydrator@example.com"})
}
