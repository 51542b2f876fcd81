package revertcommit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/rollback-controller/internal/metrics"
)

// shas are the two dry commits of a revert.
type shas struct {
	bad, target string
}

// writeRevert decides the bad and target dry SHAs (or reads them back from a commit an earlier
// attempt pushed), writes the revert commit and records it.
func (r *Reconciler) writeRevert(ctx context.Context, p *pass, t *target) error {
	rc := p.rc
	branch := RevertBranch(t.env.Branch, rc.Name)
	d, adopted, err := r.adopt(t.repo, branch, marker(rc.UID))
	if err != nil {
		return err
	}
	if !adopted {
		var failed string
		if d, failed, err = r.decide(rc, t); err != nil {
			return err
		}
		if failed != "" {
			r.fail(p, "EnvironmentMoved", failed)
			return nil
		}
	}
	restore, err := t.repo.FindDeployed(t.env.Branch, d.target, r.HistoryLimit)
	if errors.Is(err, git.ErrNotDeployed) {
		return &stall{reason: "NotDeployed", message: fmt.Sprintf(
			"dry %s was never deployed to %s (it is not in the last %d commits of its first-parent history): name a dry SHA %s ran in spec.drySHA%s",
			d.target, t.env.Branch, r.HistoryLimit, t.env.Branch, healthyHint(t.strategy, t.env.Branch))}
	}
	if err != nil {
		return err
	}
	dry, err := t.repo.DeployedDrySHA(restore)
	if err != nil {
		return err
	}
	res, err := t.repo.Restore(ctx, git.RestoreRequest{
		Branch: t.env.Branch, Restore: restore, RevertBranch: branch,
		Message: message(rc, t.env.Branch, d, restore), Marker: marker(rc.UID),
		Note: git.HydratorNoteFor(dry), When: rc.CreationTimestamp.UTC(),
	})
	if errors.Is(err, git.ErrRevertBranchTaken) {
		return &stall{reason: "RevertBranchTaken", message: err.Error() + ": delete that branch, or create the RevertCommit under another name"}
	}
	if err != nil {
		return fmt.Errorf("write the revert commit: %w", err)
	}
	st := &rc.Status
	st.BadDrySHA, st.TargetDrySHA, st.TargetHydratedSHA = d.bad, d.target, restore
	st.RevertBranch, st.RevertSHA, st.Phase = branch, res.SHA, rollbackv1alpha1.RevertPending
	now := metav1.NewMicroTime(r.Clock.Now())
	st.StartTime = &now
	conditions.MarkReconciling(&st.Conditions, rc.Generation, "Reverting",
		fmt.Sprintf("revert commit %s pushed to %s", text.ShortSHA(res.SHA), branch))
	p.announce(func() {
		r.Recorder.Eventf(rc, corev1.EventTypeNormal, EventRollbackStarted, "%s: reverting dry %s to dry %s with %s on %s%s",
			t.env.Branch, text.ShortSHA(d.bad), text.ShortSHA(d.target), text.ShortSHA(res.SHA), branch, because(rc))
		r.count(rc, metrics.ResultStarted)
	})
	return nil
}

// adopt reads the dry SHAs back from the revert branch when its tip is this RevertCommit's
// commit, pushed by an attempt that did not live to record it.
func (r *Reconciler) adopt(repo *git.Repository, branch, mark string) (shas, bool, error) {
	tip, err := repo.Resolve(branch)
	if errors.Is(err, git.ErrBranchNotFound) {
		return shas{}, false, nil
	}
	if err != nil {
		return shas{}, false, err
	}
	c, err := repo.Commit(tip)
	if err != nil {
		return shas{}, false, err
	}
	if !strings.Contains(c.Message, "\n"+mark+"\n") {
		return shas{}, false, nil
	}
	d := shas{bad: git.Trailer(c.Message, rollbackv1alpha1.TrailerRevertedDrySHA), target: git.Trailer(c.Message, rollbackv1alpha1.TrailerRestoredDrySHA)}
	return d, d.target != "", nil
}

// decide picks the bad dry SHA (what the environment runs) and the target. A non-empty failed
// message means the revert must not happen: the environment left the bad dry SHA it was for.
func (r *Reconciler) decide(rc *rollbackv1alpha1.RevertCommit, t *target) (shas, string, error) {
	env := t.env.Branch
	active, err := t.repo.DeployedDrySHA(t.tip)
	if errors.Is(err, git.ErrNoDrySHA) {
		return shas{}, "", &stall{reason: "NoDrySHA", message: fmt.Sprintf(
			"the tip of %s (%s) names no dry commit (no hydrator note, no hydrator.metadata file): Sluice cannot tell what it would revert", env, text.ShortSHA(t.tip))}
	}
	if err != nil {
		return shas{}, "", err
	}
	d := shas{bad: active.SHA, target: rc.Spec.DrySHA}
	if rc.Spec.BadDrySHA != "" && rc.Spec.BadDrySHA != d.bad {
		return d, fmt.Sprintf("%s runs dry %s now, not the bad dry %s this revert was for: nothing was reverted", env, text.ShortSHA(d.bad), text.ShortSHA(rc.Spec.BadDrySHA)), nil
	}
	if d.target == "" {
		d.target = lastHealthy(t.strategy, env, d.bad)
		if d.target == "" {
			return d, "", &stall{reason: "NoHealthyDrySHA", message: fmt.Sprintf(
				"PromotionStrategy %q records no healthy dry SHA for %s other than the one it runs (%s) in status.environments[].lastHealthyDrySHAs: name the dry SHA to go back to in spec.drySHA",
				t.strategy.Name, env, text.ShortSHA(d.bad))}
		}
	}
	if d.target == d.bad {
		return d, "", &stall{reason: "AlreadyOnTarget", message: fmt.Sprintf(
			"%s already runs dry %s: name an earlier dry SHA in spec.drySHA%s", env, text.ShortSHA(d.target), healthyHint(t.strategy, env))}
	}
	return d, "", nil
}

// lastHealthy is the newest healthy dry SHA of env that is not bad.
func lastHealthy(ps *promoterv1alpha1.PromotionStrategy, env, bad string) string {
	for _, e := range ps.Status.Environments {
		if e.Branch != env {
			continue
		}
		for _, h := range e.LastHealthyDrySHAs {
			if h.SHA != bad {
				return h.SHA
			}
		}
	}
	return ""
}

// healthyHint lists the healthy dry SHAs recorded for env, as candidates.
func healthyHint(ps *promoterv1alpha1.PromotionStrategy, env string) string {
	var out []string
	for _, e := range ps.Status.Environments {
		if e.Branch == env {
			for _, h := range e.LastHealthyDrySHAs {
				out = append(out, text.ShortSHA(h.SHA))
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ", such as one recorded healthy: " + strings.Join(out, ", ")
}

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
