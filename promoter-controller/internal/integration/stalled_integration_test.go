package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
)

// waitStalled waits until the strategy reports Stalled=True and returns that condition and Ready.
func (f *fixture) waitStalled(name string) (stalled, ready *metav1.Condition) {
	f.t.Helper()
	var last []metav1.Condition
	err := testenv.Wait(f.ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = ps.Status.Conditions
		return conditions.IsTrue(ps.Status.Conditions, conditions.Stalled), nil
	})
	require.NoError(f.t, err, "Stalled=True on %s; last conditions %+v", name, last)
	return conditions.Get(last, conditions.Stalled), conditions.Get(last, conditions.Ready)
}

// Invalid configuration is Stalled=True with its reason and message, and Ready=False beside it;
// an after cycle the same, announced by a Warning Event naming the cycle.
func TestInvalidConfigurationIsStalled(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev", "staging")
	startPromoter(t, env.Config, t.TempDir())

	_, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-repo"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "missing"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	stalled, ready := f.waitStalled("no-repo")
	assert.Equal(t, "InvalidConfiguration", stalled.Reason)
	assert.Contains(t, stalled.Message, `ScmRepository "missing" does not exist`)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)

	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "cycle"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev", After: []string{"staging"}}, {Branch: "staging", After: []string{"dev"}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	stalled, ready = f.waitStalled("cycle")
	assert.Equal(t, "InvalidConfiguration", stalled.Reason)
	assert.Contains(t, stalled.Message, "cycle")
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	require.NoError(t, testenv.Wait(f.ctx, 20*time.Second, func(context.Context) (bool, error) {
		for _, e := range f.events("InvalidConfiguration") {
			if e.InvolvedObject.Name == "cycle" && e.Type == "Warning" && strings.Contains(e.Message, "cycle") {
				return true, nil
			}
		}
		return false, nil
	}), "a Warning Event names the cycle")
}

// A PullRequest on a repository that does not exist is Stalled with the reason.
func TestPullRequestOnMissingRepositoryIsStalled(t *testing.T) {
	f := newFixture(t)
	startPromoter(t, env.Config, t.TempDir())
	_, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Create(f.ctx, &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec: promoterv1alpha1.PullRequestSpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "missing"}, Title: "t",
			SourceBranch: "dev-next", TargetBranch: "dev",
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var last []metav1.Condition
	err = testenv.Wait(f.ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = pr.Status.Conditions
		return conditions.IsTrue(last, conditions.Stalled), nil
	})
	require.NoError(t, err, "last conditions %+v", last)
	stalled := conditions.Get(last, conditions.Stalled)
	assert.Equal(t, "InvalidConfiguration", stalled.Reason)
	assert.Contains(t, stalled.Message, `ScmRepository "missing" does not exist`)
}
