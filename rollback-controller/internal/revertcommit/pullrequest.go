package revertcommit

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/text"
)

// askPullRequest creates the revert's PullRequest (stepOpen), which claims the environment, or
// makes it ask for this revert commit on this base (stepSync); the promoter-controller opens it
// on the SCM and merges it. A create lost to another revert leaves its claim to the next pass.
func (r *Reconciler) askPullRequest(ctx context.Context, p *pass, o *observation, pl plan) error {
	var pr *promoterv1alpha1.PullRequest
	var err error
	if pl.step == stepOpen {
		pr, err = r.openPullRequest(ctx, newPullRequest(o.rc, o.env.Branch, o.strategy, pl.merge.ok))
	} else {
		pr, err = r.syncPullRequest(ctx, o.pr, o.rc.Status, pullRequestLabels(o.rc, o.strategy), pl.merge.ok)
	}
	if err != nil || pr == nil {
		return err
	}
	p.recordPullRequest(pr)
	r.recordBypass(p, pr, pl.merge)
	return nil
}

// openPullRequest creates pr; nil when another revert created the name first.
func (r *Reconciler) openPullRequest(ctx context.Context, pr *promoterv1alpha1.PullRequest) (*promoterv1alpha1.PullRequest, error) {
	created, err := r.Client.PromoterV1alpha1().PullRequests(pr.Namespace).Create(ctx, pr, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("PullRequest %s: %w", pr.Name, err)
	}
	return created, nil
}

// syncPullRequest makes pr ask for the revert commit st records on its base, merged when merge
// allows, with labels (a promoter sharded by label merges only the PullRequests it watches).
// Labels set by others stay.
func (r *Reconciler) syncPullRequest(ctx context.Context, pr *promoterv1alpha1.PullRequest, st rollbackv1alpha1.RevertCommitStatus,
	labels map[string]string, merge bool) (*promoterv1alpha1.PullRequest, error) {
	next := pr.DeepCopy()
	next.Spec.ExpectedHeadSHA, next.Spec.ExpectedBaseSHA = st.RevertSHA, st.BaseSHA
	if merge {
		next.Spec.State = promoterv1alpha1.PullRequestMerged
	}
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	maps.Copy(next.Labels, labels)
	updated, err := r.Client.PromoterV1alpha1().PullRequests(next.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("update PullRequest %s: %w", next.Name, err)
	}
	return updated, nil
}

// reclaim deletes the finished PullRequest of an earlier, finished revert of the environment, so
// this revert can claim the name. The uid precondition deletes that one only.
func (r *Reconciler) reclaim(ctx context.Context, c *claim) error {
	old := c.pr
	uid := old.UID
	err := r.Client.PromoterV1alpha1().PullRequests(old.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete the finished PullRequest %s of RevertCommit %s: %w", old.Name, c.holder, err)
	}
	return nil
}

// wait leaves the pull request to the promoter-controller or a person, or waits for another
// revert's pull request to release the environment's name.
func (r *Reconciler) wait(ctx context.Context, p *pass, pr *promoterv1alpha1.PullRequest, pl plan) (controller.Result, error) {
	if pr == nil {
		conditions.MarkReconciling(&p.rc.Status.Conditions, p.rc.Generation, "WaitingForClaim", pl.message)
		return controller.Result{RequeueAfter: r.StalledRecheck}, nil
	}
	recordWaiting(p, pr, pl.merge)
	return controller.Result{RequeueAfter: r.PollInterval}, r.nudge(ctx, pr)
}

// end finishes a revert that will not merge: its open pull request is closed first.
func (r *Reconciler) end(ctx context.Context, p *pass, pr *promoterv1alpha1.PullRequest, pl plan) error {
	if pr != nil && !finishedPR(pr) && pr.Spec.State != promoterv1alpha1.PullRequestClosed {
		if err := r.closePullRequest(ctx, pr, pl.reason+": "+pl.message); err != nil {
			return fmt.Errorf("close PullRequest %s: %w", pr.Name, err)
		}
	}
	if pl.step == stepFail {
		r.recordFailure(p, pl.reason, pl.message)
		return nil
	}
	r.recordSuperseded(p, pl.reason, pl.message)
	return nil
}

// closeLeftover closes the pull request of a revert that ended without merging, if one still asks
// to merge. A second replica (or shard) with an older view of the revert can open it just after
// the first ended the revert; left open, it would merge the day the environment is back on its
// base, undoing whatever came since.
func (r *Reconciler) closeLeftover(ctx context.Context, rc *rollbackv1alpha1.RevertCommit) error {
	if rc.Status.Phase == rollbackv1alpha1.RevertMerged {
		return nil
	}
	// The cache is enough: a pull request it does not hold yet brings its owner back when it does.
	pr, err := r.PullRequests.PullRequests(rc.Namespace).Get(pullRequestName(rc))
	if err != nil || !metav1.IsControlledBy(pr, rc) || finishedPR(pr) || pr.Spec.State != promoterv1alpha1.PullRequestMerged {
		return nil
	}
	why := ""
	if ready := conditions.Get(rc.Status.Conditions, conditions.Ready); ready != nil {
		why = ready.Reason + ": " + ready.Message
	}
	if err := r.closePullRequest(ctx, pr, why); err != nil {
		return fmt.Errorf("close PullRequest %s of the ended RevertCommit %s: %w", pr.Name, rc.Name, err)
	}
	r.Log.Info("closed the pull request of an ended revert", "revertcommit", rc.Namespace+"/"+rc.Name, "pullrequest", pr.Name, "phase", rc.Status.Phase)
	return nil
}

// closePullRequest asks pr to close, saying why in EndedAnnotation when why is known.
func (r *Reconciler) closePullRequest(ctx context.Context, pr *promoterv1alpha1.PullRequest, why string) error {
	next := pr.DeepCopy()
	next.Spec.State = promoterv1alpha1.PullRequestClosed
	if why != "" {
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, EndedAnnotation, why)
	}
	_, err := r.Client.PromoterV1alpha1().PullRequests(pr.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
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

// newPullRequest is the revert's PullRequest: its revert commit into env, asked to merge when
// merge allows.
func newPullRequest(rc *rollbackv1alpha1.RevertCommit, env string, ps *promoterv1alpha1.PromotionStrategy, merge bool) *promoterv1alpha1.PullRequest {
	st := rc.Status
	state := promoterv1alpha1.PullRequestOpen
	if merge {
		state = promoterv1alpha1.PullRequestMerged
	}
	title := fmt.Sprintf("Revert %s to dry %s (from %s)", env, text.ShortSHA(st.TargetDrySHA), text.ShortSHA(st.BadDrySHA))
	if rc.Spec.Reason != "" {
		title += ": " + rc.Spec.Reason
	}
	var body strings.Builder
	fmt.Fprintf(&body, "Rollback by RevertCommit %s/%s.\n\n", rc.Namespace, rc.Name)
	fmt.Fprintf(&body, "- reverted dry commit: %s\n- restored dry commit: %s\n- restored environment commit: %s\n- revert commit: %s\n",
		st.BadDrySHA, st.TargetDrySHA, st.TargetHydratedSHA, st.RevertSHA)
	if rc.Spec.Reason != "" {
		fmt.Fprintf(&body, "\nReason: %s\n", rc.Spec.Reason)
	}
	return &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name: pullRequestName(rc), Namespace: rc.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rollbackv1alpha1.SchemeGroupVersion.WithKind("RevertCommit"))},
			Labels:          pullRequestLabels(rc, ps),
		},
		Spec: promoterv1alpha1.PullRequestSpec{
			RepositoryRef:   ps.Spec.RepositoryRef,
			Title:           text.Truncate(title, 256),
			Description:     body.String(),
			SourceBranch:    st.RevertBranch,
			TargetBranch:    env,
			ExpectedHeadSHA: st.RevertSHA,
			ExpectedBaseSHA: st.BaseSHA,
			State:           state,
		},
	}
}
