package revertcommit

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// syncPullRequest makes the revert's PullRequest exist, and asks for its merge when the revert
// may merge on its own. The promoter-controller opens it on the SCM and merges it.
func (r *Reconciler) syncPullRequest(ctx context.Context, p *pass, t *target) (*promoterv1alpha1.PullRequest, error) {
	rc := p.rc
	client := r.Client.PromoterV1alpha1().PullRequests(rc.Namespace)
	name := PullRequestName(rc.Name)
	// A live read, not the cache: right after a create the cache may not have it yet, and
	// creating twice is what must never happen.
	pr, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		pr, err = client.Create(ctx, r.newPullRequest(rc, t), metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			pr, err = client.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("PullRequest %s: %w", name, err)
	}
	if !metav1.IsControlledBy(pr, rc) {
		return nil, &stall{reason: "PullRequestTaken", message: fmt.Sprintf(
			"PullRequest %q exists and does not belong to this RevertCommit: delete it, or create the RevertCommit under another name", name)}
	}
	if pr, err = relabel(ctx, client, pr, pullRequestLabels(rc, t.strategy)); err != nil {
		return nil, fmt.Errorf("label PullRequest %s: %w", name, err)
	}
	rc.Status.PullRequest = &rollbackv1alpha1.RevertPullRequest{Name: pr.Name, URL: pr.Status.URL}
	open := pr.Status.State != promoterv1alpha1.PullRequestMerged && pr.Status.State != promoterv1alpha1.PullRequestClosed
	if open && autoMerge(rc, t.env) && pr.Spec.State == promoterv1alpha1.PullRequestOpen {
		next := pr.DeepCopy()
		next.Spec.State = promoterv1alpha1.PullRequestMerged
		if pr, err = client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return nil, fmt.Errorf("merge PullRequest %s: %w", name, err)
		}
	}
	return pr, nil
}

func (r *Reconciler) newPullRequest(rc *rollbackv1alpha1.RevertCommit, t *target) *promoterv1alpha1.PullRequest {
	st := rc.Status
	state := promoterv1alpha1.PullRequestOpen
	if autoMerge(rc, t.env) {
		state = promoterv1alpha1.PullRequestMerged
	}
	title := fmt.Sprintf("Revert %s to dry %s (from %s)", t.env.Branch, text.ShortSHA(st.TargetDrySHA), text.ShortSHA(st.BadDrySHA))
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
			Name: PullRequestName(rc.Name), Namespace: rc.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rollbackv1alpha1.SchemeGroupVersion.WithKind("RevertCommit"))},
			Labels:          pullRequestLabels(rc, t.strategy),
		},
		Spec: promoterv1alpha1.PullRequestSpec{
			RepositoryRef:   t.strategy.Spec.RepositoryRef,
			Title:           text.Truncate(title, 256),
			Description:     body.String(),
			SourceBranch:    st.RevertBranch,
			TargetBranch:    t.env.Branch,
			ExpectedHeadSHA: st.RevertSHA,
			State:           state,
		},
	}
}

// pullRequestLabels are the strategy's own labels plus the RevertCommit's name. A promoter
// sharded by --watch-label-selector selects on the strategy's labels, and only merges the
// PullRequests it watches.
func pullRequestLabels(rc *rollbackv1alpha1.RevertCommit, ps *promoterv1alpha1.PromotionStrategy) map[string]string {
	out := make(map[string]string, len(ps.Labels)+1)
	maps.Copy(out, ps.Labels)
	out[rollbackv1alpha1.RevertCommitLabel] = labelValue(rc.Name)
	return out
}

// relabel adds the labels pr lacks, such as the strategy's shard label added after the revert
// began, and leaves labels set by others alone.
func relabel(ctx context.Context, client promoterclient.PullRequestInterface, pr *promoterv1alpha1.PullRequest, want map[string]string) (*promoterv1alpha1.PullRequest, error) {
	missing := false
	for k, v := range want {
		if pr.Labels[k] != v {
			missing = true
		}
	}
	if !missing {
		return pr, nil
	}
	next := pr.DeepCopy()
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	maps.Copy(next.Labels, want)
	return client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
}

// observe sets the phase from the pull request and from git: the environment branch holding
// the revert commit is a merge, whoever made it.
func (r *Reconciler) observe(p *pass, pr *promoterv1alpha1.PullRequest, inBranch bool, tip string) {
	rc := p.rc
	st := &rc.Status
	gen := rc.Generation
	switch {
	case pr.Status.State == promoterv1alpha1.PullRequestMerged:
		r.merged(p, pr.Status.MergeSHA, pr.Status.MergeTime, pr.Status.MergedExternally)
	case inBranch:
		r.merged(p, tip, nil, pr.Spec.State != promoterv1alpha1.PullRequestMerged)
	case pr.Status.State == promoterv1alpha1.PullRequestClosed:
		r.fail(p, "PullRequestClosed", fmt.Sprintf("pull request %s was closed without merging: %s keeps dry %s; create another RevertCommit to try again",
			pr.Name, rc.Spec.ActiveBranch, text.ShortSHA(st.BadDrySHA)))
	case pr.Spec.State != promoterv1alpha1.PullRequestMerged:
		st.Phase = rollbackv1alpha1.RevertOpen
		conditions.MarkNotReady(&st.Conditions, gen, "WaitingForMerge", fmt.Sprintf(
			"pull request %s waits for a person to merge it%s (autoMerge is false); or set spec.autoMerge: true", pr.Name, at(pr.Status.URL)))
	default:
		st.Phase = rollbackv1alpha1.RevertOpen
		msg := fmt.Sprintf("merging pull request %s%s", pr.Name, at(pr.Status.URL))
		if c := conditions.Get(pr.Status.Conditions, conditions.Ready); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
			msg += ": " + c.Message
		}
		conditions.MarkReconciling(&st.Conditions, gen, "Merging", msg)
	}
}

// merged records the merge, with its Event and the DORA measures.
func (r *Reconciler) merged(p *pass, mergeSHA string, when *metav1.Time, external bool) {
	rc := p.rc
	st := &rc.Status
	st.Phase, st.MergeSHA, st.MergedExternally = rollbackv1alpha1.RevertMerged, mergeSHA, external
	if when == nil {
		now := metav1.NewTime(r.Clock.Now())
		when = &now
	}
	st.MergeTime = when
	env := rc.Spec.ActiveBranch
	msg := fmt.Sprintf("%s is back on dry %s (merge %s); dry %s is held from %s until a newer dry commit fixes it",
		env, text.ShortSHA(st.TargetDrySHA), text.ShortSHA(mergeSHA), text.ShortSHA(st.BadDrySHA), env)
	conditions.MarkReady(&st.Conditions, rc.Generation, "Merged", msg)
	p.announce(func() {
		by := ""
		if external {
			by = " (merged outside Sluice)"
		}
		r.Recorder.Event(rc, corev1.EventTypeNormal, EventRollbackMerged, msg+by)
		r.count(rc, metrics.ResultMerged)
		labels := []string{rc.Namespace, rc.Spec.PromotionStrategyRef.Name, env}
		at := r.mergeInstant(when.Time)
		if st.StartTime != nil {
			r.Metrics.RevertDuration.WithLabelValues(labels...).Observe(at.Sub(st.StartTime.Time).Seconds())
		}
		if rc.Spec.Trigger != nil {
			r.Metrics.TimeToRestore.WithLabelValues(labels...).Observe(at.Sub(rc.Spec.Trigger.FailingSince.Time).Seconds())
		}
	})
}

func at(url string) string {
	if url == "" {
		return ""
	}
	return " (" + url + ")"
}

// labelValue fits a name into a label value (63 characters).
func labelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	return bounded(s, 63)
}

// mergeInstant is when the merge happened, as precisely as known: status times are cut to the
// second, so a merge seen within a second of its recorded time is taken at the moment it was
// seen; an older one (seen after a restart) keeps its recorded time.
func (r *Reconciler) mergeInstant(recorded time.Time) time.Time {
	now := r.Clock.Now()
	if d := now.Sub(recorded); d >= 0 && d < 2*time.Second {
		return now
	}
	return recorded
}
