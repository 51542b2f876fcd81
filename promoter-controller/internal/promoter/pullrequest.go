package promoter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/scm"
)

// mergeRetries is how many times a merge whose push lost a race is redone on the new target.
const mergeRetries = 3

// notMergeableRetry is how soon a merge the SCM refused for now (checks running, mergeability
// not computed yet) is tried again.
const notMergeableRetry = 500 * time.Millisecond

// PullRequestReconciler keeps PullRequest objects and their SCM pull requests in step; on plain
// git the object is the pull request and merging it is a go-git merge and compare-and-swap push.
type PullRequestReconciler struct {
	Client       sluice.Interface
	PullRequests promoterlisters.PullRequestLister
	Metrics      *Metrics
	Log          *slog.Logger
	resolver     *resolver
	now          func() time.Time
}

// Reconcile implements controller.Reconciler.
func (r *PullRequestReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, controller.Permanent(err)
	}
	cur, err := r.PullRequests.PullRequests(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if cur.Status.State == promoterv1alpha1.PullRequestMerged || (cur.Status.State == promoterv1alpha1.PullRequestClosed && cur.Spec.State != promoterv1alpha1.PullRequestMerged) {
		return controller.Result{}, nil
	}
	pr := cur.DeepCopy()
	repo, err := r.resolver.resolve(ctx, ns, pr.Spec.RepositoryRef.Name)
	if isConfigError(err) {
		conditions.MarkStalled(&pr.Status.Conditions, pr.Generation, ReasonInvalidConfiguration, err.Error())
		pr.Status.ObservedGeneration = pr.Generation
		return controller.Result{}, r.writeStatus(ctx, cur, pr)
	}
	if err != nil {
		return controller.Result{}, err
	}
	conditions.Remove(&pr.Status.Conditions, conditions.Stalled)
	opCtx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	var res controller.Result
	if repo.pullRequests() {
		res, err = r.syncSCM(opCtx, repo, pr)
	} else {
		res, err = r.syncGit(opCtx, repo, pr)
	}
	pr.Status.ObservedGeneration = pr.Generation
	if err != nil {
		msg := err.Error()
		conditions.MarkNotReady(&pr.Status.Conditions, pr.Generation, "Failed", msg)
		if scm.IsPermanent(err) {
			conditions.MarkStalled(&pr.Status.Conditions, pr.Generation, "SCMRefused", msg)
		}
		if werr := r.writeStatus(ctx, cur, pr); werr != nil {
			return controller.Result{}, werr
		}
		if scm.IsPermanent(err) {
			return controller.Result{}, controller.Permanent(err)
		}
		return controller.Result{}, err
	}
	return res, r.writeStatus(ctx, cur, pr)
}

func (r *PullRequestReconciler) writeStatus(ctx context.Context, cur, pr *promoterv1alpha1.PullRequest) error {
	if equality.Semantic.DeepEqual(cur.Status, pr.Status) {
		return nil
	}
	_, err := r.Client.PromoterV1alpha1().PullRequests(pr.Namespace).UpdateStatus(ctx, pr, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

func (r *PullRequestReconciler) markMerged(pr *promoterv1alpha1.PullRequest, head, mergeSHA string, external bool) {
	st := &pr.Status
	st.State, st.MergedHeadSHA, st.MergeSHA, st.MergedExternally = promoterv1alpha1.PullRequestMerged, head, mergeSHA, external
	now := metav1.NewTime(r.now())
	st.MergeTime = &now
	conditions.Remove(&st.Conditions, conditions.Reconciling)
	conditions.MarkReady(&st.Conditions, pr.Generation, "Merged", fmt.Sprintf("merged %s into %s at %s", shortSHA(head), pr.Spec.TargetBranch, shortSHA(mergeSHA)))
}

// syncGit handles a PullRequest on plain git, where the object is the pull request.
func (r *PullRequestReconciler) syncGit(ctx context.Context, repo *repository, pr *promoterv1alpha1.PullRequest) (controller.Result, error) {
	src, dst := pr.Spec.SourceBranch, pr.Spec.TargetBranch
	start := time.Now()
	err := repo.git.Fetch(ctx, src, dst)
	r.Metrics.observeGit("fetch", start, err)
	var missing *git.BranchNotFoundError
	if err != nil && !errors.As(err, &missing) {
		return controller.Result{}, err
	}
	head, _ := repo.git.Resolve(src)
	target, _ := repo.git.Resolve(dst)
	pr.Status.HeadSHA = head

	// Merged outside Sluice: the target already contains the head this pull request proposes.
	if head != "" && target != "" && pr.Spec.State != promoterv1alpha1.PullRequestMerged {
		if in, err := repo.git.IsAncestor(head, target); err == nil && in {
			r.markMerged(pr, head, target, true)
			return controller.Result{}, nil
		}
	}
	switch pr.Spec.State {
	case promoterv1alpha1.PullRequestClosed:
		pr.Status.State = promoterv1alpha1.PullRequestClosed
		conditions.MarkReady(&pr.Status.Conditions, pr.Generation, "Closed", "closed without merging")
		return controller.Result{}, nil
	case promoterv1alpha1.PullRequestMerged:
	default:
		pr.Status.State = promoterv1alpha1.PullRequestOpen
		conditions.Remove(&pr.Status.Conditions, conditions.Reconciling)
		conditions.MarkReady(&pr.Status.Conditions, pr.Generation, "Open", fmt.Sprintf("open: %s -> %s at %s", src, dst, shortSHA(head)))
		return controller.Result{}, nil
	}
	if head == "" {
		return controller.Result{}, fmt.Errorf("source branch %s does not exist", src)
	}
	start = time.Now()
	res, err := repo.git.MergeAndPush(ctx, src, dst, target, mergeRetries, git.MergeOptions{
		ExpectedSourceSHA: pr.Spec.ExpectedHeadSHA,
		Message:           fmt.Sprintf("Merge %s into %s\n\n%s", src, dst, pr.Spec.Title),
	})
	r.Metrics.observeGit("merge", start, err)
	if errors.Is(err, git.ErrSourceMoved) {
		// Not merged: the head is not what was checked. The strategy re-checks the new head.
		pr.Status.State = promoterv1alpha1.PullRequestOpen
		conditions.MarkNotReady(&pr.Status.Conditions, pr.Generation, "HeadMoved",
			fmt.Sprintf("%s moved away from %s; waiting for the new head to be checked", src, shortSHA(pr.Spec.ExpectedHeadSHA)))
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("merge %s into %s: %w", src, dst, err)
	}
	// An up-to-date target after Sluice was asked to merge is a merge from an earlier attempt
	// (its reply lost in a crash), not someone else's: either way it is merged once.
	r.markMerged(pr, res.SourceSHA, res.SHA, false)
	return controller.Result{}, nil
}

// syncSCM handles a PullRequest mirrored on an SCM.
func (r *PullRequestReconciler) syncSCM(ctx context.Context, repo *repository, pr *promoterv1alpha1.PullRequest) (controller.Result, error) {
	p, sr := repo.provider, repo.scmRepo
	var remote *scm.PullRequest
	var err error
	if pr.Status.ID == "" {
		// Find before create, so a create whose reply was lost (a crash) never makes a second one.
		remote, err = p.FindOpenPullRequest(ctx, sr, pr.Spec.SourceBranch, pr.Spec.TargetBranch)
		if err != nil {
			return controller.Result{}, err
		}
		if remote == nil && pr.Spec.State != promoterv1alpha1.PullRequestClosed {
			remote, err = p.CreatePullRequest(ctx, sr, scm.NewPullRequest{Title: pr.Spec.Title, Body: pr.Spec.Description, Head: pr.Spec.SourceBranch, Base: pr.Spec.TargetBranch})
			if err != nil {
				return controller.Result{}, err
			}
		}
		if remote == nil {
			pr.Status.State = promoterv1alpha1.PullRequestClosed
			return controller.Result{}, nil
		}
		pr.Status.ID, pr.Status.URL = strconv.FormatInt(remote.Number, 10), remote.URL
		// Record the id before anything else happens to it.
		return controller.Result{RequeueAfter: time.Millisecond}, nil
	}
	number, err := strconv.ParseInt(pr.Status.ID, 10, 64)
	if err != nil {
		return controller.Result{}, controller.Permanent(fmt.Errorf("status.id %q is not a pull request number", pr.Status.ID))
	}
	if remote, err = p.GetPullRequest(ctx, sr, number); err != nil {
		return controller.Result{}, err
	}
	pr.Status.HeadSHA, pr.Status.URL = remote.HeadSHA, remote.URL
	switch remote.State {
	case scm.PullRequestMerged:
		r.markMerged(pr, remote.HeadSHA, remote.MergeCommitSHA, pr.Spec.State != promoterv1alpha1.PullRequestMerged)
		return controller.Result{}, nil
	case scm.PullRequestClosed:
		pr.Status.State = promoterv1alpha1.PullRequestClosed
		pr.Status.ClosedExternally = pr.Spec.State != promoterv1alpha1.PullRequestClosed
		conditions.MarkReady(&pr.Status.Conditions, pr.Generation, "Closed", "closed without merging")
		return controller.Result{}, nil
	}
	pr.Status.State = promoterv1alpha1.PullRequestOpen
	if remote.Title != pr.Spec.Title || remote.Body != pr.Spec.Description {
		if _, err := p.UpdatePullRequest(ctx, sr, number, pr.Spec.Title, pr.Spec.Description); err != nil {
			return controller.Result{}, err
		}
	}
	switch pr.Spec.State {
	case promoterv1alpha1.PullRequestClosed:
		if err := p.ClosePullRequest(ctx, sr, number); err != nil {
			return controller.Result{}, err
		}
		pr.Status.State = promoterv1alpha1.PullRequestClosed
		return controller.Result{}, nil
	case promoterv1alpha1.PullRequestMerged:
		res, err := p.MergePullRequest(ctx, sr, number, scm.MergeOptions{ExpectedHeadSHA: pr.Spec.ExpectedHeadSHA})
		switch {
		case scm.IsHeadMoved(err):
			conditions.MarkNotReady(&pr.Status.Conditions, pr.Generation, "HeadMoved", "the head moved; waiting for the new head to be checked")
			return controller.Result{}, nil
		case scm.IsNotMergeable(err), err != nil && scm.KindOf(err) == scm.KindTransient:
			// Checks still running, or mergeability not computed yet (Gitea answers 5xx
			// meanwhile): try again soon rather than backing off for minutes.
			conditions.MarkReconciling(&pr.Status.Conditions, pr.Generation, "NotMergeableYet", err.Error())
			return controller.Result{RequeueAfter: notMergeableRetry}, nil
		case err != nil:
			return controller.Result{}, err
		}
		r.markMerged(pr, pr.Spec.ExpectedHeadSHA, res.MergeCommitSHA, false)
		return controller.Result{}, nil
	}
	conditions.MarkReady(&pr.Status.Conditions, pr.Generation, "Open", "open at "+remote.URL)
	return controller.Result{}, nil
}
