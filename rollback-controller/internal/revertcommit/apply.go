package revertcommit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/text"
)

// nextStep is how soon the pass after a step that leads on comes: at once, from a new read.
const nextStep = time.Millisecond

// reverter is the git work of apply: find the environment commit that deployed a dry commit, and
// write the revert commit restoring it. observe opens the repository (a *git.Repository is one)
// and hands it over beside the observation, which does not carry it.
type reverter interface {
	FindDeployed(branch, drySHA string, limit int) (string, error)
	DeployedDrySHA(sha string) (git.DryCommit, error)
	Restore(ctx context.Context, req git.RestoreRequest) (git.RestoreResult, error)
}

// apply carries out the one step decide chose, records it in the pass's copy of the revert, and
// says when the next pass comes. Each step is found again from git and the cluster after a crash.
func (r *Reconciler) apply(ctx context.Context, p *pass, o *observation, pl plan, repo reverter) (controller.Result, error) {
	p.recordPullRequest(o.pr)
	if claims(pl.step) {
		if err := r.stillCurrent(ctx, o.rc); err != nil {
			return controller.Result{}, err
		}
	}
	var err error
	switch pl.step {
	case stepAdopt:
		err = r.adoptRevert(p, o, pl, repo)
	case stepWrite:
		err = r.writeRevert(ctx, p, o, pl, repo)
	case stepOpen, stepSync:
		err = r.askPullRequest(ctx, p, o, pl)
	case stepReclaim:
		err = r.reclaim(ctx, o.claim)
	case stepWait:
		return r.wait(ctx, p, o.pr, pl)
	case stepMerged:
		r.recordMerge(p, pl.mergeSHA, pl.when, pl.external)
		return controller.Result{}, nil
	case stepSupersede, stepFail:
		return controller.Result{}, r.end(ctx, p, o.pr, pl)
	case stepStall:
		return controller.Result{}, &stall{reason: pl.reason, message: pl.message}
	}
	if err != nil {
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: nextStep}, nil
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

// writeRevert writes the revert commit on the observed tip, pushes it to the revert branch
// (replacing this revert's own unmerged commit on an older tip) and records it.
func (r *Reconciler) writeRevert(ctx context.Context, p *pass, o *observation, pl plan, repo reverter) error {
	rc, env := o.rc, o.env.Branch
	restore, err := r.findRestore(repo, env, pl)
	if err != nil {
		return err
	}
	dry, err := repo.DeployedDrySHA(restore)
	if err != nil {
		return err
	}
	branch := RevertBranch(env, rc.Name)
	res, err := repo.Restore(ctx, git.RestoreRequest{
		Branch: env, Restore: restore, RevertBranch: branch, Onto: o.tip,
		Message: commitMessage(rc, env, pl.shas, restore), Marker: marker(rc.UID),
		Note: git.HydratorNoteFor(dry), When: rc.CreationTimestamp.UTC(),
	})
	if errors.Is(err, git.ErrRevertBranchTaken) {
		return &stall{reason: "RevertBranchTaken", message: err.Error() + ": delete that branch, or create the RevertCommit under another name"}
	}
	if err != nil {
		return fmt.Errorf("write the revert commit: %w", err)
	}
	r.recordRevert(p, env, o.tipDry, pl.shas, commitWritten{restore: restore, branch: branch, res: res})
	return nil
}

// adoptRevert records the revert commit an earlier pass pushed to the revert branch and did not
// live to record: the pull request may already ask for it, or have merged it.
func (r *Reconciler) adoptRevert(p *pass, o *observation, pl plan, repo reverter) error {
	st, env := o.rc.Status, o.env.Branch
	restore := st.TargetHydratedSHA
	if restore == "" || st.TargetDrySHA != pl.shas.target {
		var err error
		if restore, err = r.findRestore(repo, env, pl); err != nil {
			return err
		}
	}
	r.recordRevert(p, env, o.tipDry, pl.shas, commitWritten{restore: restore, branch: RevertBranch(env, o.rc.Name),
		res: git.RestoreResult{SHA: o.adopted.sha, Parent: o.adopted.parent, Existing: true}})
	return nil
}

// findRestore finds the environment commit that deployed the planned target, the one the revert
// restores.
func (r *Reconciler) findRestore(repo reverter, env string, pl plan) (string, error) {
	target := pl.shas.target
	restore, err := repo.FindDeployed(env, target, r.HistoryLimit)
	if errors.Is(err, git.ErrNotDeployed) {
		return "", &stall{reason: "NotDeployed", message: fmt.Sprintf(
			"dry %s was never deployed to %s (it is not in the last %d commits of its first-parent history): name a dry SHA %s ran in spec.drySHA%s",
			target, env, r.HistoryLimit, env, pl.hint)}
	}
	return restore, err
}

// commitMessage is the revert commit's message: a subject, the reason, and trailers naming the bad
// dry SHA, the target and the RevertCommit.
func commitMessage(rc *rollbackv1alpha1.RevertCommit, env string, d shas, restore string) string {
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
