package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
)

// A promoter sharded with --watch-label-selector promotes its labelled strategy, which names an
// unlabelled ScmRepository, ScmProvider, Gate and CommitStatuses: referenced objects are read
// whatever the selector says. The strategy of another shard is left alone.
func TestShardedPromoterSeesUnlabelledReferences(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev", "prod")
	f.setGate("freeze", true)
	shard := func(value string) func(*promoterv1alpha1.PromotionStrategy) {
		return func(ps *promoterv1alpha1.PromotionStrategy) {
			metav1.SetMetaDataLabel(&ps.ObjectMeta, "sluice.dev/shard", value)
		}
	}
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod", Gates: &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "freeze"}}}}}
	})
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), "app", shard("a"))
	require.NoError(t, err)
	other, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Create(f.ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"sluice.dev/shard": "b"}},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	startPromoterOpts(t, env.Config, setup.Config{CacheDir: t.TempDir()}, func(o *options.Options) { o.WatchLabelSelector = "sluice.dev/shard=a" })

	d1 := f.dryCommit("change")
	f.hydrate(d1, "dev", "prod")
	dev := f.waitEnv("dev", "promoted by the shard", testenv.PromotedTo(d1))
	f.setStatus("health", dev.Active.HydratedSHA, "success")
	f.waitEnv("prod", "promoted through the gate and the health check", testenv.PromotedTo(d1))
	for _, pr := range f.pullRequests() {
		assert.Equal(t, "a", pr.Labels["sluice.dev/shard"], "%s carries its strategy's shard", pr.Name)
	}

	// The refresh of the other shard's strategy is never handled by this shard.
	_, err = testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), other.Name, func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, "now")
	})
	require.NoError(t, err)
	f.refresh("after the other shard's refresh")
	got, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, other.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.Status.LastHandledRefresh, "another shard's strategy is not reconciled")
	assert.Empty(t, got.Status.Conditions, "nor ever was")
}
