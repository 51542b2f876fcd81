package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// newGitServedFixture is a fixture whose repository git's own server serves (source-controller
// clones shallow, which the go-git test server does not serve); the promoter pushes there too.
func newGitServedFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	testenv.SkipIfShort(t)
	f := &fixture{t: t, ctx: context.Background(), ns: fmt.Sprintf("p-%d", time.Now().UnixNano())}
	require.NoError(t, createNamespace(f.ctx, f.ns))
	var url string
	f.repo, url = gittest.NewGitServedRepo(t, "app")
	require.NoError(t, createPlainGitRepo(f.ctx, f.ns, "app", url))
	return f, url
}

// A real source-controller fetches the promoter's merge at once, though its interval is an hour:
// only the requestedAt the promoter set can explain the fetch. The first fetch, at creation, is
// of the branch before the merge.
func TestRealFluxFetchesTheMergeWithoutWaitingForItsInterval(t *testing.T) {
	f, url := newGitServedFixture(t)
	installFluxCRDs(t)
	f.bootstrap("dev")
	before := f.repo.Branch(t, "dev")
	flux.Start(t, env, flux.Options{Namespace: f.ns})
	flux.CreateGitRepository(t, env, f.ns, "dev", flux.GitRepositorySpec{URL: url, Branch: "dev", Interval: time.Hour})
	flux.WaitForFetched(t, env, f.ns, "dev", flux.Revision("dev", before))
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}}
	})
	startPromoter(t, env.Config, t.TempDir())

	d1 := f.dryCommit("bump image to 1.1")
	f.hydrate(d1, "dev")
	f.waitEnv("dev", "promoted to d1", testenv.PromotedTo(d1))
	merged := f.repo.Branch(t, "dev")
	flux.WaitForFetched(t, env, f.ns, "dev", flux.Revision("dev", merged))
}
