package fluxsources

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

type requests [][2]string

func (r *requests) Request(url, branch string) { *r = append(*r, [2]string{url, branch}) }

func TestARevertMergedWakesItsBranchAsItsStrategySays(t *testing.T) {
	strategies := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, refresh := range map[string]promoterv1alpha1.FluxSourceRefresh{"on": promoterv1alpha1.FluxSourceRefreshEnabled, "off": promoterv1alpha1.FluxSourceRefreshDisabled, "unset": "", "norepo": ""} {
		repo := "app"
		if name == "norepo" {
			repo = "missing"
		}
		require.NoError(t, strategies.Add(&promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: repo}, FluxSourceRefresh: refresh}}))
	}
	repos := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, repos.Add(&scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: "https://git.example.com/team/app.git"}}))
	for strategy, wakes := range map[string]bool{"on": true, "unset": true, "off": false, "gone": false, "norepo": false} {
		t.Run(strategy, func(t *testing.T) {
			got := requests{}
			r := &Reverts{Waker: &got, Strategies: promoterlisters.NewPromotionStrategyLister(strategies), Repositories: scmlisters.NewScmRepositoryLister(repos)}
			r.Merged(&rollbackv1alpha1.RevertCommit{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "prod-1"},
				Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: strategy}, ActiveBranch: "prod"}})
			if !wakes {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, requests{{"https://git.example.com/team/app.git", "prod"}}, got)
		})
	}
}
