package revertcommit

import (
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

func (r *Reconciler) newPullRequest(rc *rollbackv1alpha1.RevertCommit, t *observation) *promoterv1alpha1.PullRequest {
	st := rc.Status
	state := promoterv1alpha1.PullRequestOpen
	if mayMerge(t).ok {
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
			Name: pullRequestName(rc), Namespace: rc.Namespace,
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
			ExpectedBaseSHA: st.BaseSHA,
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
	if r.FluxSources != nil {
		p.announce(func() { r.FluxSources.Merged(rc) })
	}
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
