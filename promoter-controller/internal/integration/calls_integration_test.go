package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"
	"github.com/sluicehq/sluice/testenv"
)

// gitCounts is what the fixture's git server was asked so far.
type gitCounts struct{ Adverts, Uploads, Pushes int64 }

func (f *fixture) gitCounts() gitCounts {
	return gitCounts{f.srv.Advertisements(), f.srv.Uploads(), f.srv.Receives()}
}

func (c gitCounts) minus(d gitCounts) gitCounts {
	return gitCounts{c.Adverts - d.Adverts, c.Uploads - d.Uploads, c.Pushes - d.Pushes}
}

// settleAll waits until the strategy app and each of its PullRequests has nothing pending.
func (f *fixture) settleAll(m *manager.Manager, envs ...string) {
	f.t.Helper()
	f.settle(m)
	r := observed(m)
	for _, e := range envs {
		key := f.ns + "/app-" + e
		require.NoError(f.t, testenv.Wait(f.ctx, 60*time.Second, func(context.Context) (bool, error) {
			return r.idle("pullrequest", key), nil
		}), "PullRequest %s settled", key)
	}
	f.settle(m)
}

// A wave on plain git (every environment's proposed branch hydrated at once, announced by one
// refresh, as a hydrator's CI does) costs its repository one fetch: one ref advertisement and
// one download, then one push per merge. The strategy's fetch serves its PullRequests too: the
// ones created open while their environment waits for the one before (staging, prod) read the
// shared cache; before that, each fetched on every reconcile its strategy asked of it.
func TestAWaveFetchesItsRepositoryOnce(t *testing.T) {
	f := newFixture(t)
	envs := []string{"dev", "staging", "prod"}
	d0 := f.bootstrap(envs...)
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) { s.ActiveCommitStatuses = nil })
	m, _ := startPromoterManager(t, env.Config, setup.Config{CacheDir: t.TempDir()}, nil)
	f.waitEnv("prod", "reported on d0", testenv.ActiveOn(d0))
	f.settle(m)
	before := f.gitCounts()

	d1 := f.dryCommit("the wave")
	f.hydrate(d1, envs...)
	f.waitEnv("prod", "promoted to d1", testenv.PromotedTo(d1))
	f.settleAll(m, envs...)

	wave := f.gitCounts().minus(before)
	assert.Equal(t, gitCounts{Adverts: 1, Uploads: 1, Pushes: 3}, wave,
		"one fetch (ref advertisement and download) and one push per environment for the wave")
	for _, pr := range f.pullRequests() {
		assert.Equal(t, promoterv1alpha1.PullRequestMerged, pr.Status.State, pr.Name)
		assert.False(t, pr.Status.MergedExternally, pr.Name)
	}
}
