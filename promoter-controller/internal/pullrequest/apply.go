package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/promoter-controller/internal/repository"
)

// mergeRetries is how many times a merge whose push lost a race is redone on the new target.
const mergeRetries = 3

// notMergeableRetry is how soon a merge the SCM refused for now (checks running, mergeability
// not computed yet) is tried again, at first; notMergeableMaxRetry is the longest wait.
const (
	notMergeableRetry    = 500 * time.Millisecond
	notMergeableMaxRetry = time.Minute
)

// notMergeableRetryAfter is how long to wait before asking the SCM to merge again, given the
// conditions of the last refusal: 500 ms while the SCM is likely still computing mergeability,
// then a quarter of the time refused so far, up to a minute. A refusal can last: Gitea answers a
// pull request with a conflict exactly as one it is still checking ("try again later").
func notMergeableRetryAfter(conds []metav1.Condition, now time.Time) time.Duration {
	c := conditions.Get(conds, conditions.Reconciling)
	if c == nil || c.Reason != ReasonNotMergeableYet {
		return notMergeableRetry
	}
	return min(max(now.Sub(c.LastTransitionTime.Time)/4, notMergeableRetry), notMergeableMaxRetry)
}

// apply makes the plan's writes (act), then writes the status they lead to. A merge, made here
// or found made, has landed once that write returns a status merged. When the create opened a pull
// request that is asked to merge, apply returns the observation to decide that merge on: the
// object as the write stored it, and the pull request as the create answered, rather than a read
// of it (on Gitea that read was one call in four per promotion, and it can tell nothing the create
// did not; the SCM checks the head itself at the merge, and explains a refusal with a read). The
// number is recorded first, so a merge whose reply is lost is found by the next reconcile, not
// made twice.
func (r *Reconciler) apply(ctx, opCtx context.Context, cur, pr *promoterv1alpha1.PullRequest, repo *repository.Repository, pl plan) (controller.Result, *observation, error) {
	status, opened, err := r.act(opCtx, repo, pr, &pl)
	if err != nil {
		res, err := r.fail(ctx, cur, pr, status, err)
		return res, nil, err
	}
	stored, err := r.writeStatus(ctx, cur, status)
	if err != nil {
		return controller.Result{}, nil, err
	}
	if r.Merges != nil {
		r.Merges.Recorded(cur, stored)
	}
	if opened != nil && stored.Spec.State == promoterv1alpha1.PullRequestMerged {
		return controller.Result{}, &observation{PR: stored, Now: r.Clock.Now(), SCM: &remote{PR: opened}}, nil
	}
	return controller.Result{RequeueAfter: pl.Requeue}, nil, nil
}

// act makes the plan's writes to the SCM or git in order and returns the status they lead to,
// and the pull request a create opened. On an error the status is what was reached before it.
func (r *Reconciler) act(ctx context.Context, repo *repository.Repository, pr *promoterv1alpha1.PullRequest, p *plan) (promoterv1alpha1.PullRequestStatus, *scm.PullRequest, error) {
	st := *p.Status.DeepCopy()
	var opened *scm.PullRequest
	for _, a := range p.Actions {
		var err error
		switch a {
		case actCreate:
			opened, err = r.create(ctx, repo, pr, &st)
		case actUpdateText:
			_, err = repo.Provider.UpdatePullRequest(ctx, repo.SCM, number(st), pr.Spec.Title, pr.Spec.Description)
		case actClose:
			if err = repo.Provider.ClosePullRequest(ctx, repo.SCM, number(st)); err == nil {
				st.State = promoterv1alpha1.PullRequestClosed
				conditions.MarkReady(&st.Conditions, pr.Generation, ReasonClosed, "closed without merging")
			}
		case actMergeSCM:
			err = r.mergeSCM(ctx, repo, pr, &st, p)
		case actMergeGit:
			err = r.mergeGit(ctx, repo.Git, pr, &st, p.Target)
		}
		if err != nil {
			return st, opened, err
		}
	}
	return st, opened, nil
}

func number(st promoterv1alpha1.PullRequestStatus) int64 {
	n, _ := strconv.ParseInt(st.ID, 10, 64)
	return n
}

// create opens the pull request and records it open. Nothing is looked up first: an SCM opens
// one pull request per source and target, and refuses a second (Gitea and GitLab with 409,
// GitHub with 422). A refusal is the create of an earlier attempt whose reply was lost (a crash,
// a timeout): the open one is found then and recorded, so there is never a second.
func (r *Reconciler) create(ctx context.Context, repo *repository.Repository, pr *promoterv1alpha1.PullRequest, st *promoterv1alpha1.PullRequestStatus) (*scm.PullRequest, error) {
	opened, err := repo.Provider.CreatePullRequest(ctx, repo.SCM, scm.NewPullRequest{
		Title: pr.Spec.Title, Body: pr.Spec.Description, Head: pr.Spec.SourceBranch, Base: pr.Spec.TargetBranch,
	})
	if k := scm.KindOf(err); err != nil && (k == scm.KindConflict || k == scm.KindInvalid) {
		if found, findErr := repo.Provider.FindOpenPullRequest(ctx, repo.SCM, pr.Spec.SourceBranch, pr.Spec.TargetBranch); findErr == nil && found != nil {
			opened, err = found, nil
		}
	}
	if err != nil {
		return nil, err
	}
	st.ID, st.URL, st.HeadSHA, st.State = strconv.FormatInt(opened.Number, 10), opened.URL, opened.HeadSHA, promoterv1alpha1.PullRequestOpen
	if pr.Spec.State != promoterv1alpha1.PullRequestMerged {
		conditions.MarkReady(&st.Conditions, pr.Generation, ReasonOpen, "open at "+opened.URL)
	}
	return opened, nil
}

func (r *Reconciler) mergeSCM(ctx context.Context, repo *repository.Repository, pr *promoterv1alpha1.PullRequest, st *promoterv1alpha1.PullRequestStatus, p *plan) error {
	base := pr.Spec.ExpectedBaseSHA
	if base != "" {
		// Checked right before the call: an SCM that cannot guard the base itself merges only
		// within the moment between this read and its own.
		target, err := r.targetTip(ctx, repo.Git, pr.Spec.TargetBranch)
		if err != nil {
			return err
		}
		if target != base {
			baseMoved(st, pr, target)
			return nil
		}
	}
	if moved, err := r.catchUp(ctx, repo.Git, pr); err != nil || moved {
		if moved {
			headMoved(st, pr)
		}
		return err
	}
	res, err := repo.Provider.MergePullRequest(ctx, repo.SCM, number(*st), scm.MergeOptions{ExpectedHeadSHA: pr.Spec.ExpectedHeadSHA, ExpectedBaseSHA: base})
	if err != nil {
		if target, held := r.targetHoldsHead(ctx, repo.Git, pr); held {
			// A merge whose reply was lost: the process stopped while the SCM merged, and the
			// SCM may have lost its own record of it with the request (Gitea then keeps the pull
			// request open and answers "try again later" for ever). The target holds the head
			// that was asked for, so it is merged, once, by that earlier attempt.
			markMerged(st, pr, pr.Spec.ExpectedHeadSHA, target, false, r.Clock.Now())
			return nil
		} else if base != "" && target != "" && target != base {
			// Refused because the base moved (Gitea's fast-forward-only merge): not merged.
			baseMoved(st, pr, target)
			return nil
		}
	}
	switch {
	case scm.IsHeadMoved(err):
		headMoved(st, pr)
		return nil
	case scm.IsNotMergeable(err), err != nil && scm.KindOf(err) == scm.KindTransient:
		// Checks still running, or mergeability not computed yet (Gitea answers 5xx
		// meanwhile): try again soon rather than backing off for minutes, at first.
		p.Requeue = notMergeableRetryAfter(st.Conditions, r.Clock.Now())
		conditions.MarkReconciling(&st.Conditions, pr.Generation, ReasonNotMergeableYet, err.Error())
		return nil
	case err != nil:
		return err
	}
	markMerged(st, pr, pr.Spec.ExpectedHeadSHA, res.MergeCommitSHA, false, r.Clock.Now())
	if base != "" {
		r.checkMergedOnBase(ctx, repo.Git, pr, st, res.MergeCommitSHA)
	}
	return nil
}

// targetTip fetches branch and returns its commit.
func (r *Reconciler) targetTip(ctx context.Context, repo *git.Repository, branch string) (string, error) {
	if repo == nil {
		return "", fmt.Errorf("no git access to %s to check the expected base", branch)
	}
	start := time.Now()
	err := repo.Fetch(ctx, branch)
	r.Metrics.ObserveGit("fetch", start, err)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", branch, err)
	}
	return repo.Resolve(branch)
}

// checkMergedOnBase looks, right after an SCM merge, at what the merge went onto: the head itself
// (a fast-forward) or a merge commit whose first parent is the expected base. Anything else means
// the target moved in the moment between the check and the SCM's merge, which GitHub and GitLab
// cannot refuse; it is recorded, for the pull request's creator and for people.
func (r *Reconciler) checkMergedOnBase(ctx context.Context, repo *git.Repository, pr *promoterv1alpha1.PullRequest, st *promoterv1alpha1.PullRequestStatus, mergeSHA string) {
	if mergeSHA == "" {
		tip, err := r.targetTip(ctx, repo, pr.Spec.TargetBranch)
		if err != nil {
			return
		}
		mergeSHA = tip
	} else if err := repo.Fetch(ctx, pr.Spec.TargetBranch); err != nil {
		return
	}
	if mergeSHA == pr.Spec.ExpectedHeadSHA {
		return
	}
	c, err := repo.Commit(mergeSHA)
	if err != nil || (len(c.Parents) > 0 && c.Parents[0] == pr.Spec.ExpectedBaseSHA) {
		return
	}
	conditions.MarkReady(&st.Conditions, pr.Generation, ReasonMergedOnMovedBase, fmt.Sprintf(
		"merged %s into %s at %s, but %s had moved from the expected %s just before the SCM merged: the SCM cannot refuse that",
		text.ShortSHA(pr.Spec.ExpectedHeadSHA), pr.Spec.TargetBranch, text.ShortSHA(mergeSHA), pr.Spec.TargetBranch, text.ShortSHA(pr.Spec.ExpectedBaseSHA)))
}

// targetHoldsHead fetches the target branch and reports whether it already holds the head the
// pull request was asked to merge, and the target's commit.
func (r *Reconciler) targetHoldsHead(ctx context.Context, repo *git.Repository, pr *promoterv1alpha1.PullRequest) (string, bool) {
	head := pr.Spec.ExpectedHeadSHA
	if head == "" || repo == nil {
		return "", false
	}
	start := time.Now()
	err := repo.Fetch(ctx, pr.Spec.TargetBranch)
	r.Metrics.ObserveGit("fetch", start, err)
	if err != nil {
		return "", false
	}
	target, err := repo.Resolve(pr.Spec.TargetBranch)
	if err != nil {
		return "", false
	}
	held, err := repo.IsAncestor(head, target)
	return target, err == nil && held
}

func (r *Reconciler) mergeGit(ctx context.Context, repo *git.Repository, pr *promoterv1alpha1.PullRequest, st *promoterv1alpha1.PullRequestStatus, target string) error {
	src, dst := pr.Spec.SourceBranch, pr.Spec.TargetBranch
	start := time.Now()
	retries := mergeRetries
	if pr.Spec.ExpectedBaseSHA != "" {
		// Only onto the target decided on (the expected base, unless the head is in it already),
		// and never again onto a new one: the push is the guard.
		retries = 0
	}
	res, err := repo.MergeAndPush(ctx, src, dst, target, retries, git.MergeOptions{
		ExpectedSourceSHA: pr.Spec.ExpectedHeadSHA,
		Message:           fmt.Sprintf("Merge %s into %s\n\n%s", src, dst, pr.Spec.Title),
	})
	r.Metrics.ObserveGit("merge", start, err)
	switch {
	case pr.Spec.ExpectedBaseSHA != "" && errors.Is(err, git.ErrStale):
		moved, _ := r.targetTip(ctx, repo, dst)
		baseMoved(st, pr, moved)
		return nil
	case errors.Is(err, git.ErrSourceMoved):
		// Not merged: the head is not what was checked. Its creator checks the new head.
		headMoved(st, pr)
		return nil
	case err != nil:
		return fmt.Errorf("merge %s into %s: %w", src, dst, err)
	}
	// An up-to-date target after Sluice was asked to merge is a merge from an earlier attempt
	// (its reply lost in a crash), not someone else's: either way it is merged once.
	markMerged(st, pr, res.SourceSHA, res.SHA, false, r.Clock.Now())
	return nil
}
