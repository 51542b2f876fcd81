package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"time"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
)

// catchUp makes the pull request's source contain its target before the SCM is asked for a merge
// that must fast-forward. A target can have moved on without its source: a revert merged into the
// environment after the next proposal was made, say, a fix forward pushed while the revert was in
// flight. No SCM can fast-forward that, and a three-way merge of two versions of the same
// manifests conflicts, so the pull request would wait for ever. The source gets a commit on top
// with the target as its first parent and its own manifests unchanged (git.Repository.CatchUp),
// as a promotion on plain git keeps the proposal's manifests whole. It reports whether the head
// moved, by this push or by the hydrator's: either way the strategy checks the new head before
// it is merged.
func (r *Reconciler) catchUp(ctx context.Context, repo *git.Repository, pr *promoterv1alpha1.PullRequest) (bool, error) {
	src, dst := pr.Spec.SourceBranch, pr.Spec.TargetBranch
	if repo == nil || pr.Spec.ExpectedHeadSHA == "" {
		// Without git access, the SCM's own answer to the merge says what is wrong.
		return false, nil
	}
	start := time.Now()
	err := repo.Fetch(ctx, src, dst)
	r.Metrics.ObserveGit("fetch", start, err)
	if err != nil {
		return false, fmt.Errorf("fetch %s and %s: %w", src, dst, err)
	}
	start = time.Now()
	res, err := repo.CatchUp(ctx, src, dst, pr.Spec.ExpectedHeadSHA, git.MergeOptions{})
	r.Metrics.ObserveGit("catch-up", start, err)
	switch {
	case errors.Is(err, git.ErrSourceMoved), errors.Is(err, git.ErrStale):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("catch %s up with %s: %w", src, dst, err)
	}
	if res.Kind == git.MergeCommit && r.Log != nil {
		r.Log.Info("caught the source up with its target, which had moved on without it", "pullrequest", pr.Namespace+"/"+pr.Name,
			"source", src, "target", dst, "head", res.SHA)
	}
	return res.Kind == git.MergeCommit, nil
}
