package revertcommit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/text"
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
	if r.PeerCRDs != nil {
		if ready, missing := r.PeerCRDs(); !ready {
			return controller.Result{}, &stall{reason: ReasonPromoterCRDsMissing, recheck: r.StalledRecheck,
				message: "a revert is carried by a promoter.sluice.dev PullRequest and reads its repository from scm.sluice.dev: " + missing}
		}
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
	merged, err := t.repo.IsAncestor(p.rc.Status.RevertSHA, t.tip)
	if err != nil {
		return controller.Result{}, fmt.Errorf("is %s in %s: %w", text.ShortSHA(p.rc.Status.RevertSHA), t.env.Branch, err)
	}
	if !merged {
		if moved := r.moved(t, p.rc); moved != "" {
			return controller.Result{}, r.abandon(ctx, p, moved)
		}
	}
	pr, err := r.syncPullRequest(ctx, p, t)
	if err != nil {
		return controller.Result{}, err
	}
	r.observe(p, pr, merged, t.tip)
	if final(p.rc.Status.Phase) {
		return controller.Result{}, nil
	}
	return controller.Result{RequeueAfter: r.PollInterval}, r.nudge(ctx, pr)
}

// moved says why the revert must not merge any more: the environment left the bad dry SHA for
// another one (a fix forward) while the revert waited, and merging it would undo that.
func (r *Reconciler) moved(t *target, rc *rollbackv1alpha1.RevertCommit) string {
	active, err := t.repo.DeployedDrySHA(t.tip)
	if err != nil || active.SHA == rc.Status.BadDrySHA || active.SHA == rc.Status.TargetDrySHA {
		return ""
	}
	return fmt.Sprintf("%s moved on to dry %s while the revert of dry %s waited: merging it now would undo that; its pull request is closed",
		t.env.Branch, text.ShortSHA(active.SHA), text.ShortSHA(rc.Status.BadDrySHA))
}

// abandon closes the revert's pull request, if it has one still open, and fails the revert.
func (r *Reconciler) abandon(ctx context.Context, p *pass, why string) error {
	client := r.Client.PromoterV1alpha1().PullRequests(p.rc.Namespace)
	pr, err := client.Get(ctx, PullRequestName(p.rc.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case metav1.IsControlledBy(pr, p.rc) && pr.Status.State != promoterv1alpha1.PullRequestMerged && pr.Spec.State != promoterv1alpha1.PullRequestClosed:
		next := pr.DeepCopy()
		next.Spec.State = promoterv1alpha1.PullRequestClosed
		if _, err := client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("close PullRequest %s: %w", pr.Name, err)
		}
	}
	r.fail(p, "EnvironmentMoved", why)
	return nil
}

// nudge touches an open pull request mirrored on an SCM once per poll interval, so the
// promoter-controller looks at it again: a pull request closed on the SCM by a person sends no
// event the cluster sees otherwise. A merge needs no nudge: git shows it.
func (r *Reconciler) nudge(ctx context.Context, pr *promoterv1alpha1.PullRequest) error {
	if pr.Status.ID == "" || pr.Status.State != promoterv1alpha1.PullRequestOpen {
		return nil
	}
	now := r.Clock.Now()
	if last, err := time.Parse(time.RFC3339, pr.Annotations[CheckedAnnotation]); err == nil && now.Sub(last) < r.PollInterval {
		return nil
	}
	next := pr.DeepCopy()
	metav1.SetMetaDataAnnotation(&next.ObjectMeta, CheckedAnnotation, now.UTC().Format(time.RFC3339))
	_, err := r.Client.PromoterV1alpha1().PullRequests(pr.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// CheckedAnnotation on a revert's PullRequest is when the rollback-controller last asked the
// promoter-controller to look at it on the SCM.
const CheckedAnnotation = "rollback.sluice.dev/checked"

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
