package fluxsources

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

type requests [][2]string

func (r *requests) Request(url, branch string) { *r = append(*r, [2]string{url, branch}) }

func strategy(name string, refresh promoterv1alpha1.FluxSourceRefresh) *promoterv1alpha1.PromotionStrategy {
	return &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + name)},
		Spec:       promoterv1alpha1.PromotionStrategySpec{FluxSourceRefresh: refresh},
	}
}

func pullRequest(owner *metav1.OwnerReference, state promoterv1alpha1.PullRequestState) *promoterv1alpha1.PullRequest {
	pr := &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "prod"},
		Spec:       promoterv1alpha1.PullRequestSpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, SourceBranch: "prod-next", TargetBranch: "prod"},
		Status:     promoterv1alpha1.PullRequestStatus{State: state},
	}
	if owner != nil {
		pr.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return pr
}

func ownedBy(ps *promoterv1alpha1.PromotionStrategy) *metav1.OwnerReference {
	return metav1.NewControllerRef(ps, promoterv1alpha1.SchemeGroupVersion.WithKind("PromotionStrategy"))
}

func TestAMergeRecordedWakesTheTargetBranchAsItsStrategySays(t *testing.T) {
	strategies := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	on, off, unset := strategy("on", promoterv1alpha1.FluxSourceRefreshEnabled), strategy("off", promoterv1alpha1.FluxSourceRefreshDisabled), strategy("unset", "")
	for _, ps := range []*promoterv1alpha1.PromotionStrategy{on, off, unset} {
		require.NoError(t, strategies.Add(ps))
	}
	repos := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, repos.Add(&scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: "https://git.example.com/team/app.git"}}))
	revert := &metav1.OwnerReference{APIVersion: rollbackv1alpha1.SchemeGroupVersion.String(), Kind: "RevertCommit", Name: "prod-1", UID: "r", Controller: new(true)}
	gone := ownedBy(strategy("gone", promoterv1alpha1.FluxSourceRefreshDisabled))

	const open, merged = promoterv1alpha1.PullRequestOpen, promoterv1alpha1.PullRequestMerged
	for _, tc := range []struct {
		name          string
		owner         *metav1.OwnerReference
		before, after promoterv1alpha1.PullRequestState
		repository    string
		wakes         bool
	}{
		{"a strategy's merge", ownedBy(on), open, merged, "app", true},
		{"a strategy's merge, the field unset (stored before it existed)", ownedBy(unset), open, merged, "app", true},
		{"a strategy with Disabled", ownedBy(off), open, merged, "app", false},
		{"a strategy deleted since", gone, open, merged, "app", true},
		{"a person's pull request", nil, open, merged, "app", true},
		{"a revert's: the rollback-controller wakes it", revert, open, merged, "app", false},
		{"merged before: already told", ownedBy(on), merged, merged, "app", false},
		{"still open", ownedBy(on), open, open, "app", false},
		{"a repository gone", ownedBy(on), open, merged, "missing", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := requests{}
			m := &Merges{Waker: &got, Strategies: promoterlisters.NewPromotionStrategyLister(strategies), Repositories: scmlisters.NewScmRepositoryLister(repos)}
			cur, stored := pullRequest(tc.owner, tc.before), pullRequest(tc.owner, tc.after)
			cur.Spec.RepositoryRef.Name, stored.Spec.RepositoryRef.Name = tc.repository, tc.repository
			m.Recorded(cur, stored)
			if !tc.wakes {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, requests{{"https://git.example.com/team/app.git", "prod"}}, got)
		})
	}
}
