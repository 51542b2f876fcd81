// Package fluxsources asks Flux to fetch an environment branch as soon as a revert merged into it
// (pkg/fluxwake), unless the revert's PromotionStrategy says fluxSourceRefresh: Disabled: the
// old version is back in git, and Flux should not wait for its interval to apply it.
package fluxsources

import (
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// Waker takes the branch to wake (fluxwake.Waker).
type Waker interface {
	Request(repoURL, branch string)
}

// Reverts wakes the Flux sources of the branches reverts merged into.
type Reverts struct {
	Waker        Waker
	Strategies   promoterlisters.PromotionStrategyLister
	Repositories scmlisters.ScmRepositoryLister
}

// Merged is told of a revert whose merge was just recorded.
func (r *Reverts) Merged(rc *rollbackv1alpha1.RevertCommit) {
	ps, err := r.Strategies.PromotionStrategies(rc.Namespace).Get(rc.Spec.PromotionStrategyRef.Name)
	if err != nil || !ps.Spec.RefreshesFluxSources() {
		// A strategy gone since the merge: Flux fetches at its interval.
		return
	}
	repo, err := r.Repositories.ScmRepositories(rc.Namespace).Get(ps.Spec.RepositoryRef.Name)
	if err != nil {
		return
	}
	r.Waker.Request(repo.Spec.URL, rc.Spec.ActiveBranch)
}
