package promotionstrategy

import (
	"k8s.io/apimachinery/pkg/api/equality"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/promoter-controller/internal/text"
)

// proposedCommitPlan is what an environment's ProposedCommit should be: its spec from the
// strategy, its status from this reconcile.
type proposedCommitPlan struct {
	// Current is the ProposedCommit as read; nil when there is none yet.
	Current *promoterv1alpha1.ProposedCommit
	// New is the object to create when there is none.
	New  *promoterv1alpha1.ProposedCommit
	Spec promoterv1alpha1.ProposedCommitSpec
	// Labels must be on the ProposedCommit (it may carry others too).
	Labels map[string]string
	State  proposedCommitState
}

// proposedCommitState is the status a ProposedCommit gets, whatever its generation.
type proposedCommitState struct {
	Proposed, Active promoterv1alpha1.CommitState
	Ready            bool
	Reason, Message  string
}

func decideProposedCommit(ps *promoterv1alpha1.PromotionStrategy, e environment, v promotion.Verdict, st *promoterv1alpha1.EnvironmentStatus) proposedCommitPlan {
	spec := promoterv1alpha1.ProposedCommitSpec{
		RepositoryRef:          ps.Spec.RepositoryRef,
		ProposedBranch:         e.Spec.Branch + proposedSuffix(ps.Spec),
		ActiveBranch:           e.Spec.Branch,
		ProposedCommitStatuses: selectors(statusKeys(ps.Spec.ProposedCommitStatuses, e.Spec.ProposedCommitStatuses)),
		ActiveCommitStatuses:   selectors(statusKeys(ps.Spec.ActiveCommitStatuses, e.Spec.ActiveCommitStatuses)),
	}
	plan := proposedCommitPlan{Current: e.ProposedCommit, Spec: spec, Labels: ownedLabels(ps, e.Spec.Branch)}
	if plan.Current == nil {
		plan.New = &promoterv1alpha1.ProposedCommit{ObjectMeta: ownedMeta(ps, e.Spec.Branch), Spec: spec}
	}
	state := proposedCommitState{Proposed: st.Proposed, Active: st.Active}
	switch {
	case !v.Proposed:
		state.Ready, state.Reason, state.Message = true, ReasonUpToDate, "nothing to promote"
	case v.Eligible:
		state.Ready, state.Reason, state.Message = true, ReasonEligible, "eligible for promotion"
	default:
		state.Reason, state.Message = ReasonBlocked, text.Truncate(v.Message(), maxBlocked)
	}
	plan.State = state
	return plan
}

// proposedCommitStatus is cur's status with state applied; unchanged says there is nothing to write.
func proposedCommitStatus(cur *promoterv1alpha1.ProposedCommit, state proposedCommitState) (status promoterv1alpha1.ProposedCommitStatus, unchanged bool) {
	next := *cur.Status.DeepCopy()
	next.ObservedGeneration = cur.Generation
	next.Proposed, next.Active = state.Proposed, state.Active
	if state.Ready {
		conditions.MarkReady(&next.Conditions, cur.Generation, state.Reason, state.Message)
	} else {
		conditions.MarkNotReady(&next.Conditions, cur.Generation, state.Reason, state.Message)
	}
	return next, equality.Semantic.DeepEqual(next, cur.Status)
}

func selectors(keys []string) []promoterv1alpha1.CommitStatusSelector {
	if len(keys) == 0 {
		return nil
	}
	out := make([]promoterv1alpha1.CommitStatusSelector, len(keys))
	for i, k := range keys {
		out[i].Key = k
	}
	return out
}
