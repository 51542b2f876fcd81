// Package fluxsources asks Flux to fetch an environment branch as soon as the promoter merged a
// pull request into it (pkg/fluxwake), unless the pull request's PromotionStrategy says
// fluxSourceRefresh: Disabled.
package fluxsources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// Waker takes the branch to wake (fluxwake.Waker).
type Waker interface {
	Request(repoURL, branch string)
}

// Merges wakes the Flux sources of the branches pull requests merged into.
type Merges struct {
	Waker        Waker
	Strategies   promoterlisters.PromotionStrategyLister
	Repositories scmlisters.ScmRepositoryLister
}

// Recorded is told of every status write of a pull request: cur is the copy written over, stored
// the object as the write left it. A merge it records wakes the target branch's sources.
func (m *Merges) Recorded(cur, stored *promoterv1alpha1.PullRequest) {
	if !MergeRecorded(cur, stored) {
		return
	}
	m.merged(stored)
}

func (m *Merges) merged(pr *promoterv1alpha1.PullRequest) {
	if !wakes(pr, m.strategyOf(pr)) {
		return
	}
	repo, err := m.Repositories.ScmRepositories(pr.Namespace).Get(pr.Spec.RepositoryRef.Name)
	if err != nil {
		// A repository gone since the merge: Flux fetches at its interval.
		return
	}
	m.Waker.Request(repo.Spec.URL, pr.Spec.TargetBranch)
}

// strategyOf is the PromotionStrategy that controls pr, nil when none does or it is gone.
func (m *Merges) strategyOf(pr *promoterv1alpha1.PullRequest) *promoterv1alpha1.PromotionStrategy {
	owner := metav1.GetControllerOf(pr)
	if owner == nil || owner.Kind != "PromotionStrategy" || owner.APIVersion != promoterv1alpha1.SchemeGroupVersion.String() {
		return nil
	}
	ps, err := m.Strategies.PromotionStrategies(pr.Namespace).Get(owner.Name)
	if err != nil {
		return nil
	}
	return ps
}

// wakes decides whether pr's merge wakes Flux: a strategy's pull request as its strategy says; a
// revert's not here, since the rollback-controller wakes them once it records the revert merged,
// as the revert's strategy says; any other (a person's) does.
func wakes(pr *promoterv1alpha1.PullRequest, strategy *promoterv1alpha1.PromotionStrategy) bool {
	if strategy != nil {
		return strategy.Spec.RefreshesFluxSources()
	}
	owner := metav1.GetControllerOf(pr)
	return owner == nil || owner.APIVersion != rollbackv1alpha1.SchemeGroupVersion.String()
}

// MergeRecorded reports whether stored, as a status write left it, records a merge that cur, the
// copy written over, did not.
func MergeRecorded(cur, stored *promoterv1alpha1.PullRequest) bool {
	return stored != nil && stored.Status.State == promoterv1alpha1.PullRequestMerged &&
		(cur == nil || cur.Status.State != promoterv1alpha1.PullRequestMerged)
}
