package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
)

// observe reads the git heads (plain git) or the pull request on the SCM.
func (r *Reconciler) observe(ctx context.Context, repo *repository.Repository, pr *promoterv1alpha1.PullRequest) (*observation, error) {
	o := &observation{PR: pr, Now: r.Clock.Now()}
	if !repo.HasPullRequests() {
		heads, err := r.gitHeads(ctx, repo.Git, pr)
		o.Git = heads
		return o, err
	}
	o.SCM = &remote{}
	if pr.Status.ID == "" {
		// Nothing to read yet: the create finds the one an earlier attempt opened, if any.
		return o, nil
	}
	number, err := strconv.ParseInt(pr.Status.ID, 10, 64)
	if err != nil {
		return nil, controller.Permanent(fmt.Errorf("status.id %q is not a pull request number", pr.Status.ID))
	}
	o.SCM.PR, err = repo.Provider.GetPullRequest(ctx, repo.SCM, number)
	return o, err
}

// gitHeads reads the source and target branches. Two kinds of pull request are read from the
// shared cache without a fetch of their own, so that an event costs one fetch, the strategy's:
//   - one to merge whose head the cache already holds (its strategy fetched a moment ago): the
//     merge's push is a compare-and-swap that fetches again if the target moved, so a second
//     fetch per promotion would only cost a round trip;
//   - an open one of a PromotionStrategy (see strategyFetches).
func (r *Reconciler) gitHeads(ctx context.Context, repo *git.Repository, pr *promoterv1alpha1.PullRequest) (*gitHeads, error) {
	src, dst := pr.Spec.SourceBranch, pr.Spec.TargetBranch
	if !cachedHeadToMerge(repo, pr) && !strategyFetches(repo, pr) {
		start := time.Now()
		err := repo.Fetch(ctx, src, dst)
		r.Metrics.ObserveGit("fetch", start, err)
		var missing *git.BranchNotFoundError
		if err != nil && !errors.As(err, &missing) {
			return nil, err
		}
	}
	h := &gitHeads{}
	h.Head, _ = repo.Resolve(src)
	h.Target, _ = repo.Resolve(dst)
	if h.Head != "" && h.Target != "" {
		h.HeadInTarget, _ = repo.IsAncestor(h.Head, h.Target)
	}
	return h, nil
}

// cachedHeadToMerge reports whether pr is to be merged and the cache holds its expected head on
// the source branch, and a target branch.
func cachedHeadToMerge(repo *git.Repository, pr *promoterv1alpha1.PullRequest) bool {
	if pr.Spec.State != promoterv1alpha1.PullRequestMerged || pr.Spec.ExpectedHeadSHA == "" {
		return false
	}
	head, err := repo.Resolve(pr.Spec.SourceBranch)
	if err != nil || head != pr.Spec.ExpectedHeadSHA {
		return false
	}
	target, err := repo.Resolve(pr.Spec.TargetBranch)
	// A merge guarded by its base goes only onto that base, and never again onto another: a cache
	// whose target is not the base is stale for it, and the fetch it saves would turn into a refusal.
	return err == nil && (pr.Spec.ExpectedBaseSHA == "" || target == pr.Spec.ExpectedBaseSHA)
}

// strategyFetches reports whether pr is an open pull request of a PromotionStrategy whose
// branches the cache holds. Such a pull request waits for its strategy to ask for the merge; what
// its reconcile looks for in git is a merge made outside Sluice. The strategy fetches these same
// branches, into the same cache, on every event that can move git (a refresh, a webhook, its
// poll), and enqueues its open pull requests after each of its reconciles: so the cache is as new
// as the strategy's last fetch, and a fetch here would find what the strategy's next one finds,
// one round trip sooner, once per open pull request and strategy reconcile: five of the six ref
// advertisements of a three-environment wave (TestAWaveFetchesItsRepositoryOnce).
func strategyFetches(repo *git.Repository, pr *promoterv1alpha1.PullRequest) bool {
	if pr.Spec.State != promoterv1alpha1.PullRequestOpen && pr.Spec.State != "" {
		return false
	}
	owner := metav1.GetControllerOf(pr)
	if owner == nil || owner.Kind != "PromotionStrategy" || owner.APIVersion != promoterv1alpha1.SchemeGroupVersion.String() {
		return false
	}
	if _, err := repo.Resolve(pr.Spec.SourceBranch); err != nil {
		return false
	}
	_, err := repo.Resolve(pr.Spec.TargetBranch)
	return err == nil
}

// cacheIsCurrent reports whether the API server still holds the cached PullRequest. When it holds
// a newer one, the update event brings the PullRequest back to be decided on that.
func (r *Reconciler) cacheIsCurrent(ctx context.Context, cached *promoterv1alpha1.PullRequest) (bool, error) {
	live, err := r.Client.PromoterV1alpha1().PullRequests(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("PullRequest %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	return live.ResourceVersion == cached.ResourceVersion, nil
}
