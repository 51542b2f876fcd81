package revertcommit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// maxSteps bounds the steps one pass takes: adopt, write, reclaim, open, sync, then wait.
const maxSteps = 6

// advance decides and applies step after step, from what observe read once, until the revert
// waits or ends. Each step is found again from git and the cluster after a crash.
func (r *Reconciler) advance(ctx context.Context, p *pass, o *observation) (controller.Result, error) {
	for range maxSteps {
		pl := decide(o)
		if o.pr != nil {
			p.rc.Status.PullRequest = &rollbackv1alpha1.RevertPullRequest{Name: o.pr.Name, URL: o.pr.Status.URL}
		}
		var err error
		if claims(pl.step) {
			if err := r.stillCurrent(ctx, p.rc); err != nil {
				return controller.Result{}, err
			}
		}
		switch pl.step {
		case stepAdopt:
			err = r.adoptRevert(p, o, pl.shas)
		case stepWrite:
			err = r.writeRevert(ctx, p, o, pl.shas)
		case stepOpen:
			o.pr, err = r.openPullRequest(ctx, o)
			r.recordBypass(p, o)
		case stepSync:
			o.pr, err = r.syncPullRequest(ctx, o)
			r.recordBypass(p, o)
		case stepReclaim:
			err = r.reclaim(ctx, o)
		case stepWait:
			if o.pr == nil {
				conditions.MarkReconciling(&p.rc.Status.Conditions, p.rc.Generation, "WaitingForClaim", pl.message)
				return controller.Result{RequeueAfter: r.StalledRecheck}, nil
			}
			waiting(o)
			return controller.Result{RequeueAfter: r.PollInterval}, r.nudge(ctx, o.pr)
		case stepMerged:
			r.merged(p, pl.mergeSHA, pl.when, pl.external)
			return controller.Result{}, nil
		case stepSupersede, stepFail:
			return controller.Result{}, r.end(ctx, p, o.pr, pl)
		case stepStall:
			return controller.Result{}, &stall{reason: pl.reason, message: pl.message}
		}
		if err != nil {
			return controller.Result{}, err
		}
	}
	return controller.Result{RequeueAfter: time.Millisecond}, nil
}

// claims reports whether step creates, changes or deletes the environment's PullRequest, the one
// the promoter-controller merges.
func claims(s step) bool { return s == stepOpen || s == stepSync || s == stepReclaim }

// errMovedOn stops a pass whose revert changed on the API server since the pass read it.
var errMovedOn = errors.New("the RevertCommit changed since this pass read it")

// stillCurrent returns errMovedOn unless the API server still holds the revert this pass started
// from. A pass takes seconds of git work; two replicas (or shards) can both hold a revert for a
// moment, and the check at the start of the pass does not cover what another ends meanwhile.
// Without this, a pass that began before the other replica recorded the revert merged went on to
// open its pull request again, once the other's had been reclaimed by the next revert: the
// promoter merged it again the day the environment was back on its base, and the next revert
// found nothing to do. The pass stops writing nothing; the update that moved the revert on brings
// it back to decide from there.
func (r *Reconciler) stillCurrent(ctx context.Context, rc *rollbackv1alpha1.RevertCommit) error {
	current, err := r.cacheIsCurrent(ctx, rc)
	if err != nil {
		return err
	}
	if !current {
		return errMovedOn
	}
	return nil
}

// commitWritten is a revert commit in git: the environment commit it restores, its revert branch, and
// what the push gave.
type commitWritten struct {
	restore, branch string
	res             git.RestoreResult
}

// writeRevert writes the revert commit on the observed tip, pushes it to the revert branch
// (replacing this revert's own unmerged commit on an older tip) and records it.
func (r *Reconciler) writeRevert(ctx context.Context, p *pass, o *observation, d shas) error {
	w, err := r.writeCommit(ctx, o, d)
	if err != nil {
		return err
	}
	r.recordRevert(p, o, d, w)
	return nil
}

// adoptRevert records the revert commit an earlier pass pushed to the revert branch and did not
// live to record: the pull request may already ask for it, or have merged it.
func (r *Reconciler) adoptRevert(p *pass, o *observation, d shas) error {
	st := p.rc.Status
	restore := st.TargetHydratedSHA
	if restore == "" || st.TargetDrySHA != d.target {
		var err error
		if restore, err = r.findRestore(o, d.target); err != nil {
			return err
		}
	}
	r.recordRevert(p, o, d, commitWritten{restore: restore, branch: RevertBranch(o.env.Branch, p.rc.Name),
		res: git.RestoreResult{SHA: o.adopted.sha, Parent: o.adopted.parent, Existing: true}})
	return nil
}

// findRestore finds the environment commit that deployed dry target, the one the revert restores.
func (r *Reconciler) findRestore(o *observation, target string) (string, error) {
	env := o.env.Branch
	restore, err := o.repo.FindDeployed(env, target, r.HistoryLimit)
	if errors.Is(err, git.ErrNotDeployed) {
		return "", &stall{reason: "NotDeployed", message: fmt.Sprintf(
			"dry %s was never deployed to %s (it is not in the last %d commits of its first-parent history): name a dry SHA %s ran in spec.drySHA%s",
			target, env, r.HistoryLimit, env, healthyHint(o.strategy, env))}
	}
	return restore, err
}

// writeCommit writes and pushes the revert commit: git only, the status is recordRevert's.
func (r *Reconciler) writeCommit(ctx context.Context, o *observation, d shas) (commitWritten, error) {
	rc, env := o.rc, o.env.Branch
	restore, err := r.findRestore(o, d.target)
	if err != nil {
		return commitWritten{}, err
	}
	dry, err := o.repo.DeployedDrySHA(restore)
	if err != nil {
		return commitWritten{}, err
	}
	branch := RevertBranch(env, rc.Name)
	res, err := o.repo.Restore(ctx, git.RestoreRequest{
		Branch: env, Restore: restore, RevertBranch: branch, Onto: o.tip,
		Message: message(rc, env, d, restore), Marker: marker(rc.UID),
		Note: git.HydratorNoteFor(dry), When: rc.CreationTimestamp.UTC(),
	})
	if errors.Is(err, git.ErrRevertBranchTaken) {
		return commitWritten{}, &stall{reason: "RevertBranchTaken", message: err.Error() + ": delete that branch, or create the RevertCommit under another name"}
	}
	if err != nil {
		return commitWritten{}, fmt.Errorf("write the revert commit: %w", err)
	}
	return commitWritten{restore: restore, branch: branch, res: res}, nil
}

// recordRevert records the revert commit written in status, and announces it: started, or
// written again on a tip that moved.
func (r *Reconciler) recordRevert(p *pass, o *observation, d shas, w commitWritten) {
	rc, env, res := p.rc, o.env.Branch, w.res
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
				env, text.ShortSHA(previous), text.ShortSHA(res.Parent), text.ShortSHA(o.tipDry), text.ShortSHA(res.SHA))
			return
		}
		r.Recorder.Eventf(rc, corev1.EventTypeNormal, EventRollbackStarted, "%s: reverting dry %s to dry %s with %s on %s%s",
			env, text.ShortSHA(d.bad), text.ShortSHA(d.target), text.ShortSHA(res.SHA), w.branch, because(rc))
		r.count(rc, metrics.ResultStarted)
	})
}

// openPullRequest creates the revert's PullRequest, which claims the environment; the
// promoter-controller opens it on the SCM and merges it. Losing the create to another revert
// records its claim instead, for the next decision.
func (r *Reconciler) openPullRequest(ctx context.Context, o *observation) (*promoterv1alpha1.PullRequest, error) {
	client := r.Client.PromoterV1alpha1().PullRequests(o.rc.Namespace)
	pr, err := client.Create(ctx, r.newPullRequest(o.rc, o), metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil, r.readPullRequest(ctx, o)
	}
	if err != nil {
		return nil, fmt.Errorf("PullRequest %s: %w", pullRequestName(o.rc), err)
	}
	return pr, nil
}

// reclaim deletes the finished PullRequest of an earlier, finished revert of the environment, so
// this revert can claim the name. The uid precondition deletes that one only.
func (r *Reconciler) reclaim(ctx context.Context, o *observation) error {
	old := o.claim.pr
	uid := old.UID
	err := r.Client.PromoterV1alpha1().PullRequests(old.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete the finished PullRequest %s of RevertCommit %s: %w", old.Name, o.claim.holder, err)
	}
	o.claim = nil
	return nil
}

// syncPullRequest makes the PullRequest ask for this revert commit on this base, merged when
// autoMerge allows, with the strategy's labels (a promoter sharded by label merges only the
// PullRequests it watches). Labels set by others stay.
func (r *Reconciler) syncPullRequest(ctx context.Context, o *observation) (*promoterv1alpha1.PullRequest, error) {
	next := o.pr.DeepCopy()
	next.Spec.ExpectedHeadSHA, next.Spec.ExpectedBaseSHA = o.rc.Status.RevertSHA, o.rc.Status.BaseSHA
	if mayMerge(o).ok {
		next.Spec.State = promoterv1alpha1.PullRequestMerged
	}
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	maps.Copy(next.Labels, pullRequestLabels(o.rc, o.strategy))
	pr, err := r.Client.PromoterV1alpha1().PullRequests(next.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("update PullRequest %s: %w", next.Name, err)
	}
	return pr, nil
}

// recordBypass records, in status and an Event, a merge asked through a closed Gate.
func (r *Reconciler) recordBypass(p *pass, o *observation) {
	m := mayMerge(o)
	st := &p.rc.Status
	if o.pr == nil || o.pr.Spec.State != promoterv1alpha1.PullRequestMerged || m.bypass == "" || st.GateBypass != "" {
		return
	}
	st.GateBypass = text.Truncate(fmt.Sprintf("%s: merge asked through the gate (spec.bypassGates) at %s", m.bypass, r.Clock.Now().UTC().Format(time.RFC3339)), 1024)
	rc, msg := p.rc, st.GateBypass
	p.announce(func() { r.Recorder.Event(rc, corev1.EventTypeWarning, EventGateBypassed, msg) })
}

// end finishes a revert that will not merge: its open pull request is closed first.
func (r *Reconciler) end(ctx context.Context, p *pass, pr *promoterv1alpha1.PullRequest, pl plan) error {
	if pr != nil && pr.Status.State != promoterv1alpha1.PullRequestMerged && pr.Status.State != promoterv1alpha1.PullRequestClosed &&
		pr.Spec.State != promoterv1alpha1.PullRequestClosed {
		next := pr.DeepCopy()
		next.Spec.State = promoterv1alpha1.PullRequestClosed
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, EndedAnnotation, pl.reason+": "+pl.message)
		if _, err := r.Client.PromoterV1alpha1().PullRequests(pr.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("close PullRequest %s: %w", pr.Name, err)
		}
	}
	if pl.step == stepFail {
		r.fail(p, pl.reason, pl.message)
		return nil
	}
	rc := p.rc
	rc.Status.Phase = rollbackv1alpha1.RevertSuperseded
	conditions.MarkReady(&rc.Status.Conditions, rc.Generation, pl.reason, pl.message)
	conditions.Remove(&rc.Status.Conditions, conditions.Reconciling)
	p.announce(func() {
		r.Recorder.Event(rc, corev1.EventTypeNormal, EventRollbackSuperseded, pl.message)
		r.count(rc, metrics.ResultSuperseded)
	})
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
	ready := conditions.Get(rc.Status.Conditions, conditions.Ready)
	next := pr.DeepCopy()
	next.Spec.State = promoterv1alpha1.PullRequestClosed
	if ready != nil {
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, EndedAnnotation, ready.Reason+": "+ready.Message)
	}
	if _, err := r.Client.PromoterV1alpha1().PullRequests(pr.Namespace).Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("close PullRequest %s of the ended RevertCommit %s: %w", pr.Name, rc.Name, err)
	}
	r.Log.Info("closed the pull request of an ended revert", "revertcommit", rc.Namespace+"/"+rc.Name, "pullrequest", pr.Name, "phase", rc.Status.Phase)
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

// EndedAnnotation on a revert's PullRequest closed by the rollback-controller is why the revert
// ended ("<reason>: <message>"), written with the close: a pass that dies between the close and
// the status write is finished the same way by the next one.
const EndedAnnotation = "rollback.sluice.dev/ended"

// CheckedAnnotation on a revert's PullRequest is when the rollback-controller last asked the
// promoter-controller to look at it on the SCM.
const CheckedAnnotation = "rollback.sluice.dev/checked"

// message is the revert commit's message: a subject, the reason, and trailers naming the bad
// dry SHA, the target and the RevertCommit.
func message(rc *rollbackv1alpha1.RevertCommit, env string, d shas, restore string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Revert %s to dry %s\n\n", env, text.ShortSHA(d.target))
	fmt.Fprintf(&b, "Restores the hydrated manifests %s ran for dry commit %s (environment commit %s),\nreplacing dry commit %s.\n\n",
		env, d.target, restore, d.bad)
	if rc.Spec.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n\n", strings.ReplaceAll(rc.Spec.Reason, "\n", " "))
	}
	fmt.Fprintf(&b, "%s: %s\n", rollbackv1alpha1.TrailerRevertedDrySHA, d.bad)
	fmt.Fprintf(&b, "%s: %s\n", rollbackv1alpha1.TrailerRestoredDrySHA, d.target)
	fmt.Fprintf(&b, "%s: %s/%s\n", rollbackv1alpha1.TrailerRevertCommit, rc.Namespace, rc.Name)
	fmt.Fprintf(&b, "%s\n", marker(rc.UID))
	return b.String()
}

func because(rc *rollbackv1alpha1.RevertCommit) string {
	if rc.Spec.Reason == "" {
		return ""
	}
	return ": " + rc.Spec.Reason
}
