package revertcommit

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
)

// step is the one thing a pass does next.
type step int

const (
	// stepAdopt records this revert's commit found at the tip of its revert branch: an earlier
	// pass pushed it (and may have asked for its merge), then died before its status write.
	stepAdopt step = iota + 1
	// stepWrite writes the revert commit on the environment's tip (again, when the tip moved).
	stepWrite
	// stepOpen creates the PullRequest; stepSync updates its expected commits, state and labels.
	stepOpen
	stepSync
	// stepReclaim deletes the finished PullRequest of an earlier revert that holds the name.
	stepReclaim
	// stepWait leaves the pull request to the promoter-controller or to a person.
	stepWait
	// stepMerged, stepSupersede and stepFail end the revert.
	stepMerged
	stepSupersede
	stepFail
	// stepStall reports input a person must fix.
	stepStall
)

// plan is what decide chose: a step and what it needs.
type plan struct {
	step    step
	reason  string
	message string
	// shas are the dry commits the revert commit is written for (stepWrite, stepAdopt), and hint
	// the healthy dry SHAs to name should the target never have been deployed.
	shas shas
	hint string
	// merge is whether the pull request may be asked to merge, and if not why it waits
	// (stepOpen, stepSync, stepWait with a pull request).
	merge mergeVerdict
	// mergeSHA and external describe a merge (stepMerged).
	mergeSHA string
	external bool
	when     *metav1.Time
}

// decide chooses the one step of this pass from what observe read. It reads and writes nothing.
func decide(o *observation) plan {
	st, pr := o.rc.Status, o.pr
	switch {
	case o.adopted != nil && o.adopted.sha != st.RevertSHA:
		// First, or a merge would be recorded with the commit before it.
		return plan{step: stepAdopt, shas: o.adopted.shas, hint: healthyHint(o.strategy, o.env.Branch)}
	case pr != nil && pr.Status.State == promoterv1alpha1.PullRequestMerged:
		return plan{step: stepMerged, mergeSHA: pr.Status.MergeSHA, when: pr.Status.MergeTime, external: pr.Status.MergedExternally}
	case o.inTip:
		return plan{step: stepMerged, mergeSHA: o.tip, external: pr == nil || pr.Spec.State != promoterv1alpha1.PullRequestMerged}
	case pr != nil && pr.Spec.State == promoterv1alpha1.PullRequestClosed && pr.Annotations[EndedAnnotation] != "":
		// An earlier pass ended the revert and closed its pull request, then died before the status
		// write: end it the same way, not as a pull request someone else closed.
		reason, message, _ := strings.Cut(pr.Annotations[EndedAnnotation], ": ")
		return plan{step: stepSupersede, reason: reason, message: message}
	case pr != nil && pr.Status.State == promoterv1alpha1.PullRequestClosed:
		return plan{step: stepFail, reason: "PullRequestClosed", message: fmt.Sprintf(
			"pull request %s was closed without merging: %s keeps dry %s; create another RevertCommit to try again",
			pr.Name, o.env.Branch, text.ShortSHA(st.BadDrySHA))}
	case o.claim != nil && o.claim.inFlight:
		return plan{step: stepSupersede, reason: "AnotherRevertInFlight", message: fmt.Sprintf(
			"RevertCommit %s already reverts %s (PullRequest %s): one revert runs per environment, so this one ends here and nothing of it was merged",
			o.claim.holder, o.env.Branch, o.claim.pr.Name)}
	case st.RevertSHA == "" || st.BaseSHA != o.tip:
		return decideWrite(o)
	case o.claim != nil && finishedPR(o.claim.pr):
		return plan{step: stepReclaim}
	case o.claim != nil:
		return plan{step: stepWait, message: fmt.Sprintf("waiting for PullRequest %s of the finished RevertCommit %s to close", o.claim.pr.Name, o.claim.holder)}
	case pr == nil:
		return plan{step: stepOpen, merge: mayMerge(o)}
	case pullRequestBehind(o):
		return plan{step: stepSync, merge: mayMerge(o)}
	}
	return plan{step: stepWait, merge: mayMerge(o)}
}

// decideWrite plans the revert commit on the tip: the first one, or again after the environment
// branch moved under an unmerged one. A tip that moved on to a newer dry commit is a fix forward,
// which the revert must never undo: it ends superseded.
func decideWrite(o *observation) plan {
	env, st := o.env.Branch, o.rc.Status
	bad := badDrySHA(o.rc, o.adopted)
	if !o.tipNotNewer {
		return plan{step: stepSupersede, reason: "FixedForward", message: fmt.Sprintf(
			"%s moved on to dry %s, not the bad dry %s nor an older one, before the revert merged: a fix forward landed, and nothing was reverted",
			env, text.ShortSHA(o.tipDry), text.ShortSHA(bad))}
	}
	if bad == "" {
		bad = o.tipDry
	}
	d := shas{bad: bad, target: o.rc.Spec.DrySHA}
	switch {
	case o.adopted != nil:
		d = o.adopted.shas
	case st.TargetDrySHA != "":
		d.target = st.TargetDrySHA
	}
	if d.target == "" {
		if d.target = lastHealthy(o.strategy, env, d.bad, o.reverted); d.target == "" {
			return plan{step: stepStall, reason: "NoHealthyDrySHA", message: fmt.Sprintf(
				"PromotionStrategy %q records no healthy dry SHA for %s other than the one it runs (%s) and those reverted before, in status.environments[].lastHealthyDrySHAs: name the dry SHA to go back to in spec.drySHA",
				o.strategy.Name, env, text.ShortSHA(d.bad))}
		}
	}
	switch {
	case d.target == d.bad:
		return plan{step: stepStall, reason: "AlreadyOnTarget", message: fmt.Sprintf(
			"%s already runs dry %s: name an earlier dry SHA in spec.drySHA%s", env, text.ShortSHA(d.target), healthyHint(o.strategy, env))}
	case o.tipDry == d.target:
		by := "another change"
		if o.tipRevertedBy != "" {
			by = "RevertCommit " + o.tipRevertedBy
		}
		return plan{step: stepSupersede, reason: "AlreadyRestored", message: fmt.Sprintf(
			"%s was put back on dry %s by %s before this revert merged: nothing more to revert", env, text.ShortSHA(d.target), by)}
	}
	return plan{step: stepWrite, shas: d, hint: healthyHint(o.strategy, env)}
}

// pullRequestBehind reports whether the PullRequest does not yet ask for what the revert
// needs: this revert commit, on this base, merged when autoMerge allows, with the labels.
func pullRequestBehind(o *observation) bool {
	pr, st := o.pr, o.rc.Status
	if pr.Spec.ExpectedHeadSHA != st.RevertSHA || pr.Spec.ExpectedBaseSHA != st.BaseSHA {
		return true
	}
	if m := mayMerge(o); m.ok && (pr.Spec.State == promoterv1alpha1.PullRequestOpen || (m.bypass != "" && st.GateBypass == "")) {
		return true
	}
	for k, v := range pullRequestLabels(o.rc, o.strategy) {
		if pr.Labels[k] != v {
			return true
		}
	}
	return false
}

// finishedPR reports whether pr is merged or closed, so nothing more will happen to it.
func finishedPR(pr *promoterv1alpha1.PullRequest) bool {
	return pr.Status.State == promoterv1alpha1.PullRequestMerged || pr.Status.State == promoterv1alpha1.PullRequestClosed
}

// mergeVerdict says whether the revert may be asked to merge now, and if not why it waits.
type mergeVerdict struct {
	ok              bool
	reason, message string
	// bypass is the Gate hold a merge asked now bypasses (spec.bypassGates), to record.
	bypass string
}

// mayMerge gives the seed's three modes: autoMerge false waits for a person; autoMerge with
// required checks waits for them to pass on the revert commit; autoMerge alone merges at once.
// A closed Gate on the strategy holds the merge unless spec.bypassGates says otherwise.
func mayMerge(o *observation) mergeVerdict {
	rc, st := o.rc, o.rc.Status
	if !autoMerge(rc, o.env) {
		return mergeVerdict{reason: "WaitingForMerge", message: "waits for a person to merge it (autoMerge is false); or set spec.autoMerge: true"}
	}
	var pending []string
	for _, k := range rc.Spec.RequiredCommitStatuses {
		phase := commitstatusv1alpha1.CommitStatusPhase("")
		if o.checksSHA == st.RevertSHA {
			phase = o.checks[k.Key]
		}
		if phase == "" {
			phase = "not reported"
		}
		if phase != commitstatusv1alpha1.CommitStatusSuccess {
			pending = append(pending, fmt.Sprintf("%s (%s)", k.Key, phase))
		}
	}
	if len(pending) > 0 {
		return mergeVerdict{reason: "WaitingForChecks", message: fmt.Sprintf("waits for %s on revert commit %s before it merges",
			strings.Join(pending, ", "), text.ShortSHA(st.RevertSHA))}
	}
	if o.gateHold == "" {
		return mergeVerdict{ok: true}
	}
	if !rc.Spec.BypassGates {
		return mergeVerdict{reason: "HeldByGate", message: "waits for the Gate to open (" + o.gateHold + "); or set spec.bypassGates: true to merge through the freeze"}
	}
	return mergeVerdict{ok: true, bypass: o.gateHold}
}

// lastHealthy is the newest healthy dry SHA of env that is not bad, nor reverted before.
func lastHealthy(ps *promoterv1alpha1.PromotionStrategy, env, bad string, reverted []string) string {
	for _, e := range ps.Status.Environments {
		if e.Branch != env {
			continue
		}
		for _, h := range e.LastHealthyDrySHAs {
			if h.SHA != bad && !slices.Contains(reverted, h.SHA) {
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

// autoMerge is the RevertCommit's choice, else the environment's, else true.
func autoMerge(rc *rollbackv1alpha1.RevertCommit, env promoterv1alpha1.Environment) bool {
	if rc.Spec.AutoMerge != nil {
		return *rc.Spec.AutoMerge
	}
	return env.AutoMerge == nil || *env.AutoMerge
}
