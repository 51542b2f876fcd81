package pullrequest

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/text"
)

// observation is what one reconcile reads before deciding: the object, and either the git heads
// (plain git) or the pull request on the SCM.
type observation struct {
	PR  *promoterv1alpha1.PullRequest
	Now time.Time
	Git *gitHeads
	// SCM is set when pull requests live on an SCM.
	SCM *remote
}

// gitHeads are the source and target branches as last fetched; "" when a branch is missing.
type gitHeads struct {
	Head, Target string
	// HeadInTarget is true when the target already holds the head: it was merged.
	HeadInTarget bool
}

// remote is the pull request on the SCM with the object's number. Nil while the object has no
// number yet: the create is what finds one.
type remote struct {
	PR *scm.PullRequest
}

// action is one write to the SCM or git, made in plan order.
type action int

const (
	actCreate action = iota + 1
	actUpdateText
	actClose
	actMergeSCM
	actMergeGit
)

// plan is what one reconcile does: the status before any action, the actions, and when to look again.
type plan struct {
	Status  promoterv1alpha1.PullRequestStatus
	Actions []action
	Requeue time.Duration
	// Target is the target branch's commit a git merge goes on top of (compare-and-swap).
	Target string
	// Err is an error to retry, found without acting.
	Err error
}

// merges reports whether the plan merges the pull request.
func (p plan) merges() bool {
	return slices.Contains(p.Actions, actMergeGit) || slices.Contains(p.Actions, actMergeSCM)
}

// finished reports whether nothing is left to do for pr: merged, or closed and not asked to merge.
func finished(pr *promoterv1alpha1.PullRequest) bool {
	s := pr.Status.State
	return s == promoterv1alpha1.PullRequestMerged || (s == promoterv1alpha1.PullRequestClosed && pr.Spec.State != promoterv1alpha1.PullRequestMerged)
}

// alignedSpec is pr's spec with its state set to what happened to a finished pull request, and
// whether that changes it: after a merge or close outside Sluice, spec.state must not stay open.
func alignedSpec(pr *promoterv1alpha1.PullRequest) (promoterv1alpha1.PullRequestSpec, bool) {
	spec := pr.Spec
	switch {
	case pr.Status.State == promoterv1alpha1.PullRequestMerged && spec.State != promoterv1alpha1.PullRequestMerged:
		spec.State = promoterv1alpha1.PullRequestMerged
		if spec.ExpectedHeadSHA == "" {
			// The API requires the head to merge: it is the one that was merged.
			spec.ExpectedHeadSHA = pr.Status.MergedHeadSHA
		}
	case pr.Status.State == promoterv1alpha1.PullRequestClosed && spec.State == promoterv1alpha1.PullRequestOpen:
		spec.State = promoterv1alpha1.PullRequestClosed
	default:
		return spec, false
	}
	return spec, spec.ExpectedHeadSHA != "" || spec.State != promoterv1alpha1.PullRequestMerged
}

// decide decides a pull request on what o read: its git heads, or its pull request on the SCM.
func decide(o *observation) plan {
	if o.SCM != nil {
		return decideSCM(o)
	}
	return decideGit(o)
}

// decideGit decides a pull request on plain git, where the object is the pull request.
func decideGit(o *observation) plan {
	pr, g := o.PR, o.Git
	p := plan{Status: *pr.Status.DeepCopy()}
	st := &p.Status
	st.ObservedGeneration = pr.Generation
	// The repository resolved and was read: whatever stalled before is fixed.
	conditions.Remove(&st.Conditions, conditions.Stalled)
	st.HeadSHA = g.Head
	if g.Head != "" && g.Target != "" && pr.Spec.State != promoterv1alpha1.PullRequestMerged && g.HeadInTarget {
		// Merged outside Sluice: the target already holds the head this pull request proposes.
		markMerged(st, pr, g.Head, g.Target, true, o.Now)
		return p
	}
	switch pr.Spec.State {
	case promoterv1alpha1.PullRequestClosed:
		st.State = promoterv1alpha1.PullRequestClosed
		conditions.MarkReady(&st.Conditions, pr.Generation, ReasonClosed, "closed without merging")
	case promoterv1alpha1.PullRequestMerged:
		if g.Head == "" {
			p.Err = fmt.Errorf("source branch %s does not exist", pr.Spec.SourceBranch)
			return p
		}
		if base := pr.Spec.ExpectedBaseSHA; base != "" && g.Target != base && !g.HeadInTarget {
			baseMoved(st, pr, g.Target)
			return p
		}
		p.Actions, p.Target = []action{actMergeGit}, g.Target
	default:
		st.State = promoterv1alpha1.PullRequestOpen
		conditions.MarkReady(&st.Conditions, pr.Generation, ReasonOpen, fmt.Sprintf("%s -> %s at %s waits for spec.state merged", pr.Spec.SourceBranch, pr.Spec.TargetBranch, text.ShortSHA(g.Head)))
	}
	return p
}

// decideSCM decides a pull request mirrored on an SCM.
func decideSCM(o *observation) plan {
	pr, rp := o.PR, o.SCM.PR
	p := plan{Status: *pr.Status.DeepCopy()}
	st := &p.Status
	st.ObservedGeneration = pr.Generation
	conditions.Remove(&st.Conditions, conditions.Stalled)
	if st.ID == "" {
		if pr.Spec.State == promoterv1alpha1.PullRequestClosed {
			st.State = promoterv1alpha1.PullRequestClosed
			return p
		}
		// One asked to merge is decided again once the number is recorded, on what the create
		// answered, and merged in the same reconcile (Reconcile).
		p.Actions = []action{actCreate}
		return p
	}
	st.HeadSHA, st.URL = rp.HeadSHA, rp.URL
	switch rp.State {
	case scm.PullRequestMerged:
		markMerged(st, pr, rp.HeadSHA, rp.MergeCommitSHA, pr.Spec.State != promoterv1alpha1.PullRequestMerged, o.Now)
		return p
	case scm.PullRequestClosed:
		st.State = promoterv1alpha1.PullRequestClosed
		st.ClosedExternally = pr.Spec.State != promoterv1alpha1.PullRequestClosed
		conditions.MarkReady(&st.Conditions, pr.Generation, ReasonClosed, "closed without merging")
		return p
	}
	st.State = promoterv1alpha1.PullRequestOpen
	if rp.Title != pr.Spec.Title || rp.Body != pr.Spec.Description {
		p.Actions = append(p.Actions, actUpdateText)
	}
	switch pr.Spec.State {
	case promoterv1alpha1.PullRequestClosed:
		p.Actions = append(p.Actions, actClose)
	case promoterv1alpha1.PullRequestMerged:
		p.Actions = append(p.Actions, actMergeSCM)
	default:
		conditions.MarkReady(&st.Conditions, pr.Generation, ReasonOpen, "open at "+rp.URL)
	}
	return p
}

// markMerged records a merge of head into the target, at mergeSHA.
func markMerged(st *promoterv1alpha1.PullRequestStatus, pr *promoterv1alpha1.PullRequest, head, mergeSHA string, external bool, now time.Time) {
	st.State, st.MergedHeadSHA, st.MergeSHA, st.MergedExternally = promoterv1alpha1.PullRequestMerged, head, mergeSHA, external
	t := metav1.NewTime(now)
	st.MergeTime = &t
	conditions.MarkReady(&st.Conditions, pr.Generation, ReasonMerged, fmt.Sprintf("merged %s into %s at %s", text.ShortSHA(head), pr.Spec.TargetBranch, text.ShortSHA(mergeSHA)))
}

// headMoved records a merge refused because the source moved away from the checked head.
func headMoved(st *promoterv1alpha1.PullRequestStatus, pr *promoterv1alpha1.PullRequest) {
	st.State = promoterv1alpha1.PullRequestOpen
	conditions.MarkNotReady(&st.Conditions, pr.Generation, ReasonHeadMoved,
		fmt.Sprintf("%s moved away from %s; waiting for the new head to be checked", pr.Spec.SourceBranch, text.ShortSHA(pr.Spec.ExpectedHeadSHA)))
}

// baseMoved records a merge not made because the target moved away from the expected base.
func baseMoved(st *promoterv1alpha1.PullRequestStatus, pr *promoterv1alpha1.PullRequest, target string) {
	st.State = promoterv1alpha1.PullRequestOpen
	conditions.MarkNotReady(&st.Conditions, pr.Generation, ReasonBaseMoved,
		fmt.Sprintf("%s moved from %s to %s: not merged onto a target it was not written on", pr.Spec.TargetBranch,
			text.ShortSHA(pr.Spec.ExpectedBaseSHA), text.ShortSHA(target)))
}

// failed records an error; a permanent one is Stalled, for a person to act on.
func failed(st *promoterv1alpha1.PullRequestStatus, pr *promoterv1alpha1.PullRequest, err error, permanent bool) {
	st.ObservedGeneration = pr.Generation
	conditions.MarkNotReady(&st.Conditions, pr.Generation, ReasonFailed, err.Error())
	if permanent {
		conditions.MarkStalled(&st.Conditions, pr.Generation, ReasonSCMRefused, err.Error())
	}
}
