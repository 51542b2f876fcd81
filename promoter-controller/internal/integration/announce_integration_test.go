package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
)

// Three changes promoted through three environments are announced and counted exactly three
// times per environment: a reconcile that starts from the copy the cache held before the
// controller's own status write must not announce a merge again.
func TestEachPromotionIsAnnouncedAndCountedOnce(t *testing.T) {
	f := newFixture(t)
	envs := []string{"dev", "staging", "prod"}
	f.bootstrap(envs...)
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) { s.ActiveCommitStatuses = nil })
	m, _ := startPromoterManager(t, env.Config, setup.Config{CacheDir: t.TempDir()}, nil)

	for i := 1; i <= 3; i++ {
		dry := f.dryCommit(fmt.Sprintf("change %d", i))
		// One environment at a time, so the test stays under client-go's per-object Event burst
		// (25) whatever the spam filter does: this test is about the controller's count.
		for _, e := range envs {
			f.hydrateUnannounced(dry, e)
			f.refresh(fmt.Sprintf("hydrated change %d for %s", i, e))
			f.waitEnv(e, fmt.Sprintf("change %d promoted", i), testenv.PromotedTo(dry))
		}
	}
	// Reconciles of one key never overlap: once this refresh is handled, every reconcile that
	// could have announced a merge again has finished.
	f.refresh("all promoted")

	for _, e := range envs {
		assert.Equal(t, 3.0, counterSum(t, m.Metrics.Registry, "sluice_promoter_promotions_total", "environment", e), "promotions_total{environment=%q}", e)
		assert.Equal(t, 3.0, counterSum(t, m.Metrics.Registry, "sluice_promoter_deployments_total", "environment", e), "deployments_total{environment=%q}", e)
	}

	// The Event sink writes in order: once an Event the controller emits after the refresh is
	// stored, every earlier one is too. A spec error is such an Event.
	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		ps.Spec.Environments[0].After = []string{"prod"}
	})
	require.NoError(t, err)
	require.NoError(t, testenv.Wait(f.ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(f.events("InvalidConfiguration")) > 0, nil
	}))
	completed := map[string]int32{}
	for _, ev := range f.events(promotionstrategy.EventPromotionCompleted) {
		branch, _, _ := strings.Cut(ev.Message, ":")
		completed[branch] += max(ev.Count, 1)
	}
	assert.Equal(t, map[string]int32{"dev": 3, "staging": 3, "prod": 3}, completed, "PromotionCompleted Events per environment")
}

// counterSum adds the counters of name whose label has value.
func counterSum(t *testing.T, g prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	var sum float64
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, metric := range mf.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += metric.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
