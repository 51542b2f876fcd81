package revertcommit

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// The records below write what a step did into the pass's copy of the revert, and queue its
// Events and metrics, announced once that status is written.

// recordPullRequest records the revert's pull request; nil records nothing.
func (p *pass) recordPullRequest(pr *promoterv1alpha1.PullRequest) {
	if pr != nil {
		p.rc.Status.PullRequest = &rollbackv1alpha1.RevertPullRequest{Name: pr.Name, URL: pr.Status.URL}
	}
}

// commitWritten is a revert commit in git: the environment commit it restores, its revert branch, and
// what the push gave.
type commitWritten struct {
	restore, branch string
	res             git.RestoreResult
}

// recordRevert records the revert commit written on env, which ran dry tipDry, and announces
// it: started, or written again on a tip that moved.
func (r *Reconciler) recordRevert(p *pass, env, tipDry string, d shas, w commitWritten) {
	rc, res := p.rc, w.res
	st := &rc.Status
	replanned := st.RevertSHA != "" && st.RevertSHA != res.SHA
	previous := st.BaseSHA
	st.BadDrySHA, st.TargetDrySHA, st.TargetHydratedSHA = d.bad, d.target, w.restore
	st.RevertBranch, st.RevertSHA, st.BaseSHA = w.branch, res.SHA, res.Parent
	if st.StartTime == nil {
		now := metav1.NewMicroTime(r.Clock.Now())
		st.StartTime, st.Phase = &now, rollbackv1alpha1.RevertPending
	}
	conditions.MarkReconciling(&st.Conditions, rc.Generation, "Reverting",
		fmt.Sprintf("revert commit %s pushed to %s, written on %s of %s", text.ShortSHA(res.SHA), w.branch, text.ShortSHA(res.Parent), env))
	p.announce(func() {
		if replanned {
			r.Recorder.Eventf(rc, corev1.EventTypeNormal, EventRollbackReplanned, "%s moved from %s to %s (dry %s) before the revert merged: revert commit %s written on the new tip",
				env, text.ShortSHA(previous), text.ShortSHA(res.Parent), text.ShortSHA(tipDry), text.ShortSHA(res.SHA))
			return
		}
		r.Recorder.Eventf(rc, corev1.EventTypeNormal, EventRollbackStarted, "%s: reverting dry %s to dry %s with %s on %s%s",
			env, text.ShortSHA(d.bad), text.ShortSHA(d.target), text.ShortSHA(res.SHA), w.branch, because(rc))
		r.count(rc, metrics.ResultStarted)
	})
}

// recordBypass records, in status and an Event, a merge asked through a closed Gate.
func (r *Reconciler) recordBypass(p *pass, pr *promoterv1alpha1.PullRequest, m mergeVerdict) {
	st := &p.rc.Status
	if pr.Spec.State != promoterv1alpha1.PullRequestMerged || m.bypass == "" || st.GateBypass != "" {
		return
	}
	st.GateBypass = text.Truncate(fmt.Sprintf("%s: merge asked through the gate (spec.bypassGates) at %s", m.bypass, r.Clock.Now().UTC().Format(time.RFC3339)), 1024)
	rc, msg := p.rc, st.GateBypass
	p.announce(func() { r.Recorder.Event(rc, corev1.EventTypeWarning, EventGateBypassed, msg) })
}

// recordWaiting is the status of a revert whose pull request pr is open: asked to merge, or waiting
// for what m names.
func recordWaiting(p *pass, pr *promoterv1alpha1.PullRequest, m mergeVerdict) {
	st, gen := &p.rc.Status, p.rc.Generation
	st.Phase = rollbackv1alpha1.RevertOpen
	if pr.Spec.State != promoterv1alpha1.PullRequestMerged {
		conditions.MarkNotReady(&st.Conditions, gen, m.reason, fmt.Sprintf("pull request %s%s %s", pr.Name, at(pr.Status.URL), m.message))
		return
	}
	msg := fmt.Sprintf("merging pull request %s%s", pr.Name, at(pr.Status.URL))
	if c := conditions.Get(pr.Status.Conditions, conditions.Ready); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
		msg += ": " + c.Message
	}
	conditions.MarkReconciling(&st.Conditions, gen, "Merging", msg)
}

// recordMerge records the merge, with its Event and the DORA measures.
func (r *Reconciler) recordMerge(p *pass, mergeSHA string, when *metav1.Time, external bool) {
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

// recordFailure ends the revert: nothing more will happen to it.
func (r *Reconciler) recordFailure(p *pass, reason, message string) {
	rc := p.rc
	rc.Status.Phase = rollbackv1alpha1.RevertFailed
	conditions.MarkStalled(&rc.Status.Conditions, rc.Generation, reason, message)
	p.announce(func() {
		r.Recorder.Event(rc, corev1.EventTypeWarning, EventRollbackFailed, message)
		r.count(rc, metrics.ResultFailed)
	})
}

// recordSuperseded ends the revert with nothing of it merged: another change did its work first.
func (r *Reconciler) recordSuperseded(p *pass, reason, message string) {
	rc := p.rc
	rc.Status.Phase = rollbackv1alpha1.RevertSuperseded
	conditions.MarkReady(&rc.Status.Conditions, rc.Generation, reason, message)
	conditions.Remove(&rc.Status.Conditions, conditions.Reconciling)
	p.announce(func() {
		r.Recorder.Event(rc, corev1.EventTypeNormal, EventRollbackSuperseded, message)
		r.count(rc, metrics.ResultSuperseded)
	})
}

func (r *Reconciler) count(rc *rollbackv1alpha1.RevertCommit, result string) {
	r.Metrics.Total.WithLabelValues(rc.Namespace, rc.Spec.PromotionStrategyRef.Name, rc.Spec.ActiveBranch, trigger(rc), result).Inc()
}

func trigger(rc *rollbackv1alpha1.RevertCommit) string {
	if rc.Spec.Trigger != nil {
		return metrics.TriggerAutomatic
	}
	return metrics.TriggerManual
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

func at(url string) string {
	if url == "" {
		return ""
	}
	return " (" + url + ")"
}

func because(rc *rollbackv1alpha1.RevertCommit) string {
	if rc.Spec.Reason == "" {
		return ""
	}
	return ": " + rc.Spec.Reason
}
