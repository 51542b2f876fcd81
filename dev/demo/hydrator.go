package demo

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/pkg/git"
)

// hydrator writes dry and hydrated commits the way Argo CD's source hydrator lays them out. Each
// environment branch holds one manifest, the ConfigMap <app>-<env>, which Flux applies: its data
// say which version and dry commit run there, and whether that version is healthy there.
type hydrator struct {
	repo *git.Repository
	// app names the ConfigMaps.
	app string
	// badInProd is a version whose rendering for prod is unhealthy (it reads a setting that only
	// prod lacks), so its HealthCheck fails there and nowhere else.
	badInProd string
}

func (h *hydrator) dryCommit(ctx context.Context, version string) (string, error) {
	_ = h.repo.Fetch(ctx, "main")
	return h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: "main", Message: "web " + version,
		Files: map[string][]byte{"apps/web/values.yaml": []byte("image: ghcr.io/example/web:" + version + "\n")},
	})
}

// commit renders version of dry onto branch (an environment branch or its -next).
func (h *hydrator) commit(ctx context.Context, branch, dry, version string) (string, error) {
	env := strings.TrimSuffix(branch, "-next")
	healthy := !(env == "prod" && version == h.badInProd)
	manifest := configMap(h.app+"-"+env, map[string]string{"version": version, "dry": dry, "healthy": strconv.FormatBool(healthy)})
	_ = h.repo.Fetch(ctx, branch)
	return h.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: branch, Message: env + ": web " + version,
		Files: map[string][]byte{"web.yaml": []byte(manifest), git.DefaultMetadataFile: git.HydratorNote(dry)},
	})
}

// propose renders dry onto <env>-next, on top of <env>, and records the dry SHA in a git note.
func (h *hydrator) propose(ctx context.Context, env, dry, version string) error {
	if err := h.repo.Fetch(ctx, env); err != nil {
		return err
	}
	tip, err := h.repo.Resolve(env)
	if err != nil {
		return err
	}
	if err := h.repo.CreateBranch(ctx, env+"-next", tip); err != nil {
		return err
	}
	return h.renderNext(ctx, env, dry, version)
}

// reproposeOnTop renders dry onto <env>-next again, started from <env> (which contains the last
// proposal), and notes the dry SHA.
func (h *hydrator) reproposeOnTop(ctx context.Context, env, dry, version string) error {
	err := h.repo.Fetch(ctx, env, env+"-next")
	var missing *git.BranchNotFoundError
	if err != nil && !errors.As(err, &missing) {
		return err
	}
	tip, err := h.repo.Resolve(env)
	if err != nil {
		return err
	}
	next, _ := h.repo.Resolve(env + "-next")
	if err := h.repo.Push(ctx, env+"-next", tip, next); err != nil {
		return err
	}
	return h.renderNext(ctx, env, dry, version)
}

func (h *hydrator) renderNext(ctx context.Context, env, dry, version string) error {
	sha, err := h.commit(ctx, env+"-next", dry, version)
	if err != nil {
		return err
	}
	_ = h.repo.Fetch(ctx, env+"-next")
	return h.repo.AddNote(ctx, sha, git.HydratorNote(dry), git.Identity{Name: "hydrator", Email: "hydrator@example.com"})
}
