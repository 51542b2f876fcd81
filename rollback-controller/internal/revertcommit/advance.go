package revertcommit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
)

// target is what one pass works on: the strategy, the environment and the repository.
type target struct {
	strategy *promoterv1alpha1.PromotionStrategy
	env      promoterv1alpha1.Environment
	repo     *git.Repository
	// tip is the environment branch as just fetched.
	tip string
}

// advance takes the revert as far as it can go now: the commit, the pull request, the merge.
func (r *Reconciler) advance(ctx context.Context, p *pass) (controller.Result, error) {
	if r.PromoterCRDs != nil && !r.PromoterCRDs() {
		return controller.Result{}, &stall{reason: "PromoterCRDsMissing", recheck: r.StalledRecheck,
			message: "the promoter.sluice.dev CRDs (PromotionStrategy, PullRequest) are not installed: a revert is carried by the promoter-controller's PullRequest; install the promoter-controller chart, or this chart with its crds/"}
	}
	t, err := r.resolve(ctx, p.rc)
	if err != nil {
		return controller.Result{}, err
	}
	if p.rc.Status.RevertSHA == "" {
		if err := r.writeRevert(ctx, p, t); err != nil || final(p.rc.Status.Phase) {
			return controller.Result{}, err
		}
	}
	pr, err := r.syncPullRequest(ctx, p, t)
	if err != nil {
		return controller.Result{}, err
	}
	merged, err := t.repo.IsAncestor(p.rc.Status.RevertSHA, t.tip)
	if err != nil {
		return controller.Result{}, fmt.Errorf("is %s in %s: %w", shortSHA(p.rc.Status.RevertSHA), t.env.Branch, err)
	}
	r.observe(p, pr, merged, t.tip)
	if final(p.rc.Status.Phase) {
		return controller.Result{}, nil
	}
	return controller.Result{RequeueAfter: r.PollInterval}, nil
}

// resolve finds the strategy, the environment and the repository, and fetches the branches.
func (r *Reconciler) resolve(ctx context.Context, rc *rollbackv1alpha1.RevertCommit) (*target, error) {
	name := rc.Spec.PromotionStrategyRef.Name
	ps, err := r.Strategies.PromotionStrategies(rc.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, &stall{reason: "PromotionStrategyNotFound",
			message: fmt.Sprintf("PromotionStrategy %q does not exist in namespace %q: create it, or fix spec.promotionStrategyRef", name, rc.Namespace)}
	}
	if err != nil {
		return nil, err
	}
	t := &target{strategy: ps}
	var names []string
	found := false
	for _, e := range ps.Spec.Environments {
		names = append(names, e.Branch)
		if e.Branch == rc.Spec.ActiveBranch {
			t.env, found = e, true
		}
	}
	if !found {
		return nil, &stall{reason: "EnvironmentNotFound",
			message: fmt.Sprintf("PromotionStrategy %q has no environment %q (it has %s): fix spec.activeBranch", name, rc.Spec.ActiveBranch, strings.Join(names, ", "))}
	}
	if t.repo, err = r.Opener.Open(ctx, rc.Namespace, ps.Spec.RepositoryRef.Name); err != nil {
		return nil, configStall(err, r.StalledRecheck)
	}
	branches := []string{t.env.Branch, ps.Spec.DryBranch, RevertBranch(t.env.Branch, rc.Name)}
	err = t.repo.Fetch(ctx, branches...)
	var missing *git.BranchNotFoundError
	if errors.As(err, &missing) {
		for _, b := range missing.Branches {
			if b == t.env.Branch {
				return nil, &stall{reason: "BranchNotFound", recheck: r.StalledRecheck,
					message: fmt.Sprintf("branch %q is not in %s: nothing to revert", b, t.repo.URL())}
			}
		}
		err = nil
	}
	if err != nil {
		if errors.Is(err, git.ErrAuthentication) || errors.Is(err, git.ErrRepositoryNotFound) {
			return nil, &stall{reason: "InvalidRepository", recheck: r.StalledRecheck, message: fmt.Sprintf("fetch %s: %v", t.repo.URL(), err)}
		}
		return nil, fmt.Errorf("fetch %s: %w", t.repo.URL(), err)
	}
	if t.tip, err = t.repo.Resolve(t.env.Branch); err != nil {
		return nil, err
	}
	return t, nil
}

// autoMerge is the RevertCommit's choice, else the environment's, else true.
func autoMerge(rc *rollbackv1alpha1.RevertCommit, env promoterv1alpha1.Environment) bool {
	if rc.Spec.AutoMerge != nil {
		return *rc.Spec.AutoMerge
	}
	return env.AutoMerge == nil || *env.AutoMerge
}
