package revertcommit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/pkg/text"
)

// observation is everything one pass decides on, read afresh before any write: the revert as
// the pass found it, the strategy and the environment, the environment branch in git, this
// revert's own commit, and its PullRequest. Nothing changes it once read: apply writes the
// pass's own copy of the revert, and git only through the handle observe returns beside it.
type observation struct {
	rc       *rollbackv1alpha1.RevertCommit
	strategy *promoterv1alpha1.PromotionStrategy
	env      promoterv1alpha1.Environment
	// tip is the environment branch as just fetched, and tipDry the dry commit it deploys.
	tip, tipDry string
	// tipRevertedBy is the RevertCommit (namespace/name) whose revert commit the tip is, if any.
	tipRevertedBy string
	// tipNotNewer is true when tipDry is the bad dry commit or older on the dry branch: the
	// environment still needs the revert.
	tipNotNewer bool
	// adopted is this revert's own commit at the tip of its revert branch, written by an attempt
	// that did not live to record it; nil when there is none.
	adopted *ownCommit
	// inTip is true when the environment branch holds the recorded (or adopted) revert commit.
	inTip bool
	// pr is the revert's PullRequest, read live; nil when there is none yet.
	pr *promoterv1alpha1.PullRequest
	// reverted are the dry SHAs merged reverts of the environment took it away from: never a
	// default target.
	reverted []string
	// checks are the phases of spec.requiredCommitStatuses on checksSHA (the revert commit as
	// recorded when observed), by key; a key with no CommitStatus is absent.
	checks    map[string]commitstatusv1alpha1.CommitStatusPhase
	checksSHA string
	// gateHold is why a closed Gate holds the strategy (it carries gating.sluice.dev/gates and is
	// suspended), or "".
	gateHold string
	// claim is set when another revert's PullRequest holds the environment's name.
	claim *claim
}

// ownCommit is a revert commit of this RevertCommit found in git.
type ownCommit struct {
	sha, parent string
	shas        shas
}

// shas are the two dry commits of a revert.
type shas struct {
	bad, target string
}

// observe reads the strategy, git and the PullRequest. Input a person must fix is a *stall. The
// repository it read is returned beside the observation, for apply's git work alone.
func (r *Reconciler) observe(ctx context.Context, rc *rollbackv1alpha1.RevertCommit) (*observation, *git.Repository, error) {
	if r.PeerCRDs != nil {
		if ready, missing := r.PeerCRDs(); !ready {
			return nil, nil, &stall{reason: ReasonPromoterCRDsMissing, recheck: r.StalledRecheck,
				message: "a revert is carried by a promoter.sluice.dev PullRequest and reads its repository from scm.sluice.dev: " + missing}
		}
	}
	o, err := r.resolve(rc.DeepCopy())
	if err != nil {
		return nil, nil, err
	}
	repo, err := r.Opener.Open(ctx, rc.Namespace, o.strategy.Spec.RepositoryRef.Name)
	if err != nil {
		return nil, nil, configStall(err, r.StalledRecheck)
	}
	o.reverted = r.revertedDrySHAs(rc)
	o.gateHold = gateHold(o.strategy)
	if err := r.readGit(ctx, repo, o); err != nil {
		return nil, nil, err
	}
	return o, repo, r.readPullRequest(ctx, o)
}

// claim is the PullRequest of another revert of the environment, which holds its name.
type claim struct {
	pr *promoterv1alpha1.PullRequest
	// holder is the RevertCommit that owns it; inFlight is true while that revert is not over.
	holder   string
	inFlight bool
}

// readPullRequest reads the environment's revert PullRequest live, not from the cache: right
// after a create the cache may not have it yet, and creating twice is what must never happen.
// Another revert's is the environment's claim; anything else under the name is a stall.
func (r *Reconciler) readPullRequest(ctx context.Context, o *observation) error {
	rc := o.rc
	pr, err := r.Client.PromoterV1alpha1().PullRequests(rc.Namespace).Get(ctx, pullRequestName(rc), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("PullRequest %s: %w", pullRequestName(rc), err)
	case metav1.IsControlledBy(pr, rc):
		o.pr = pr
		return nil
	}
	owner := metav1.GetControllerOf(pr)
	if owner == nil || owner.Kind != "RevertCommit" {
		return &stall{reason: "PullRequestTaken", message: fmt.Sprintf(
			"PullRequest %q exists and does not belong to a RevertCommit: delete it", pr.Name)}
	}
	o.claim = &claim{pr: pr, holder: owner.Name}
	holder, err := r.Client.RollbackV1alpha1().RevertCommits(rc.Namespace).Get(ctx, owner.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("RevertCommit %s: %w", owner.Name, err)
	default:
		o.claim.inFlight = holder.UID == owner.UID && !Final(holder.Status.Phase)
	}
	return nil
}

// readGit fetches the branches, and reads the environment's tip, the dry commit it deploys, and
// this revert's commit.
func (r *Reconciler) readGit(ctx context.Context, repo *git.Repository, o *observation) error {
	if err := r.fetch(ctx, repo, o); err != nil {
		return err
	}
	st := o.rc.Status
	adopted, err := adopt(repo, RevertBranch(o.env.Branch, o.rc.Name), marker(o.rc.UID))
	if err != nil {
		return err
	}
	o.adopted = adopted
	// The revert branch's own commit is newer than the recorded one when they differ: each write
	// pushes before it records.
	revert := st.RevertSHA
	if adopted != nil {
		revert = adopted.sha
	}
	if revert != "" {
		o.checksSHA, o.checks = revert, r.checks(o, revert)
		if o.inTip, err = repo.IsAncestor(revert, o.tip); err != nil {
			return fmt.Errorf("is %s in %s: %w", text.ShortSHA(revert), o.env.Branch, err)
		}
	}
	active, err := repo.DeployedDrySHA(o.tip)
	if errors.Is(err, git.ErrNoDrySHA) {
		return &stall{reason: "NoDrySHA", message: fmt.Sprintf(
			"the tip of %s (%s) names no dry commit (no hydrator note, no hydrator.metadata file): Sluice cannot tell what it would revert", o.env.Branch, text.ShortSHA(o.tip))}
	}
	if err != nil {
		return err
	}
	o.tipDry = active.SHA
	if c, err := repo.Commit(o.tip); err == nil {
		o.tipRevertedBy = git.Trailer(c.Message, rollbackv1alpha1.TrailerRevertCommit)
	}
	bad := badDrySHA(o.rc, adopted)
	o.tipNotNewer = bad == "" || o.tipDry == bad
	if !o.tipNotNewer {
		// Older on the dry branch is still bad (or older than the fix the revert waits for).
		older, err := repo.IsAncestor(o.tipDry, bad)
		o.tipNotNewer = err == nil && older
	}
	return nil
}

// badDrySHA is the dry commit this revert is for, as far as known before deciding.
func badDrySHA(rc *rollbackv1alpha1.RevertCommit, adopted *ownCommit) string {
	switch {
	case rc.Status.BadDrySHA != "":
		return rc.Status.BadDrySHA
	case adopted != nil:
		return adopted.shas.bad
	}
	return rc.Spec.BadDrySHA
}

// adopt finds this RevertCommit's commit at the tip of its revert branch.
func adopt(repo *git.Repository, branch, mark string) (*ownCommit, error) {
	tip, err := repo.Resolve(branch)
	if errors.Is(err, git.ErrBranchNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := repo.Commit(tip)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(c.Message, "\n"+mark+"\n") || len(c.Parents) == 0 {
		return nil, nil
	}
	d := shas{bad: git.Trailer(c.Message, rollbackv1alpha1.TrailerRevertedDrySHA), target: git.Trailer(c.Message, rollbackv1alpha1.TrailerRestoredDrySHA)}
	if d.target == "" {
		return nil, nil
	}
	return &ownCommit{sha: tip, parent: c.Parents[0], shas: d}, nil
}

// resolve finds the strategy and the environment.
func (r *Reconciler) resolve(rc *rollbackv1alpha1.RevertCommit) (*observation, error) {
	name := rc.Spec.PromotionStrategyRef.Name
	ps, err := r.Strategies.PromotionStrategies(rc.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, &stall{reason: "PromotionStrategyNotFound",
			message: fmt.Sprintf("PromotionStrategy %q does not exist in namespace %q: create it, or fix spec.promotionStrategyRef", name, rc.Namespace)}
	}
	if err != nil {
		return nil, err
	}
	o := &observation{rc: rc, strategy: ps}
	var names []string
	for _, e := range ps.Spec.Environments {
		names = append(names, e.Branch)
		if e.Branch == rc.Spec.ActiveBranch {
			o.env = e
			return o, nil
		}
	}
	return nil, &stall{reason: "EnvironmentNotFound",
		message: fmt.Sprintf("PromotionStrategy %q has no environment %q (it has %s): fix spec.activeBranch", name, rc.Spec.ActiveBranch, strings.Join(names, ", "))}
}

// fetch fetches the environment, dry and revert branches and reads the environment's tip.
func (r *Reconciler) fetch(ctx context.Context, repo *git.Repository, o *observation) error {
	branches := []string{o.env.Branch, o.strategy.Spec.DryBranch, RevertBranch(o.env.Branch, o.rc.Name)}
	err := repo.Fetch(ctx, branches...)
	var missing *git.BranchNotFoundError
	if errors.As(err, &missing) {
		for _, b := range missing.Branches {
			if b == o.env.Branch {
				return &stall{reason: "BranchNotFound", recheck: r.StalledRecheck,
					message: fmt.Sprintf("branch %q is not in %s: nothing to revert", b, repo.URL())}
			}
		}
		err = nil
	}
	if err != nil {
		if errors.Is(err, git.ErrAuthentication) || errors.Is(err, git.ErrRepositoryNotFound) {
			return &stall{reason: "InvalidRepository", recheck: r.StalledRecheck, message: fmt.Sprintf("fetch %s: %v", repo.URL(), err)}
		}
		return fmt.Errorf("fetch %s: %w", repo.URL(), err)
	}
	o.tip, err = repo.Resolve(o.env.Branch)
	return err
}

// revertedDrySHAs lists the bad dry SHAs of the environment's merged reverts, from the cache: a
// dry SHA that was reverted is no target, even when it was healthy for a while.
func (r *Reconciler) revertedDrySHAs(rc *rollbackv1alpha1.RevertCommit) []string {
	all, err := r.RevertCommits.RevertCommits(rc.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []string
	for _, other := range all {
		if other.Spec.PromotionStrategyRef == rc.Spec.PromotionStrategyRef && other.Spec.ActiveBranch == rc.Spec.ActiveBranch &&
			other.Status.Phase == rollbackv1alpha1.RevertMerged && other.Status.BadDrySHA != "" {
			out = append(out, other.Status.BadDrySHA)
		}
	}
	return out
}

// checks reads the phases of the required commit-status keys on sha, from the cache.
func (r *Reconciler) checks(o *observation, sha string) map[string]commitstatusv1alpha1.CommitStatusPhase {
	out := map[string]commitstatusv1alpha1.CommitStatusPhase{}
	if r.CommitStatuses == nil {
		return out
	}
	for _, k := range o.rc.Spec.RequiredCommitStatuses {
		sel := labels.SelectorFromSet(labels.Set{commitstatusv1alpha1.KeyLabel: k.Key})
		list, _ := r.CommitStatuses.CommitStatuses(o.rc.Namespace).List(sel)
		for _, cs := range list {
			if cs.Spec.SHA == sha && cs.Spec.RepositoryRef.Name == o.strategy.Spec.RepositoryRef.Name {
				out[k.Key] = cs.Spec.Phase
			}
		}
	}
	return out
}

// gateHold is why a closed Gate holds the strategy: it names gates and is suspended.
func gateHold(ps *promoterv1alpha1.PromotionStrategy) string {
	if ps.Annotations[gate.GatesAnnotation] == "" {
		return ""
	}
	if s := suspend.Get(ps, ps.Spec.Suspend); s.Suspended {
		return fmt.Sprintf("PromotionStrategy %s is held by its gates (%s): %s", ps.Name, ps.Annotations[gate.GatesAnnotation], s.Message)
	}
	return ""
}
