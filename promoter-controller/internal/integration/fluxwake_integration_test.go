package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/fluxwake"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

var fluxCRDs sync.Once

// installFluxCRDs installs Flux's CRDs into the shared control plane, once per package.
func installFluxCRDs(t *testing.T) {
	t.Helper()
	var err error
	fluxCRDs.Do(func() {
		var paths []string
		if paths, err = flux.CRDPaths(); err == nil {
			err = env.InstallCRDPaths(paths...)
		}
	})
	require.NoError(t, err)
}

// createGitRepository creates a Flux GitRepository named name in the fixture's namespace.
func (f *fixture) createGitRepository(name, url string, ref map[string]any) {
	f.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"url": url, "interval": "1h", "ref": ref}}}
	u.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	u.SetKind("GitRepository")
	u.SetName(name)
	_, err := env.Dynamic.Resource(fluxwake.GitRepositories).Namespace(f.ns).Create(f.ctx, u, metav1.CreateOptions{})
	require.NoError(f.t, err)
}

// requestedAt records every requestedAt value each GitRepository of the fixture's namespace
// is given, from before the promoter starts.
type requestedAt struct {
	mu     sync.Mutex
	values map[string][]string
}

func (f *fixture) watchRequestedAt() *requestedAt {
	f.t.Helper()
	w, err := env.Dynamic.Resource(fluxwake.GitRepositories).Namespace(f.ns).Watch(f.ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	f.t.Cleanup(w.Stop)
	r := &requestedAt{values: map[string][]string{}}
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			v := u.GetAnnotations()[fluxwake.RequestedAtAnnotation]
			r.mu.Lock()
			seen := r.values[u.GetName()]
			if v != "" && (len(seen) == 0 || seen[len(seen)-1] != v) {
				r.values[u.GetName()] = append(seen, v)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *requestedAt) of(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.values[name]...)
}

// waitRequested waits until source name was asked to fetch n times in all.
func (f *fixture) waitRequested(r *requestedAt, name string, n int) []string {
	f.t.Helper()
	require.NoError(f.t, testenv.Wait(f.ctx, 60*time.Second, func(context.Context) (bool, error) {
		return len(r.of(name)) >= n, nil
	}), "GitRepository %s asked to fetch %d times; it was %d times", name, n, len(r.of(name)))
	return r.of(name)
}

// A merge into dev asks the Flux sources that track dev of that repository to fetch, however
// their URL is spelled, with the annotation `flux reconcile source git` sets; a source of another
// branch, or pinned to a commit, is left alone.
func TestAMergeAsksTheFluxSourcesOfItsBranchToFetch(t *testing.T) {
	f := newFixture(t)
	installFluxCRDs(t)
	f.bootstrap("dev")
	url := f.srv.URL("app")
	f.createGitRepository("dev", strings.TrimSuffix(url, ".git")+"/", map[string]any{"branch": "dev"})
	f.createGitRepository("dev-by-ref-name", url, map[string]any{"name": "refs/heads/dev"})
	f.createGitRepository("main", url, map[string]any{"branch": "main"})
	f.createGitRepository("dev-pinned", url, map[string]any{"branch": "dev", "commit": strings.Repeat("a", 40)})
	requested := f.watchRequestedAt()
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}}
	})
	startPromoter(t, env.Config, t.TempDir())

	d1 := f.dryCommit("bump image to 1.1")
	before := time.Now()
	f.hydrate(d1, "dev")
	f.waitEnv("dev", "promoted to d1", testenv.PromotedTo(d1))
	for _, name := range []string{"dev", "dev-by-ref-name"} {
		values := f.waitRequested(requested, name, 1)
		at, err := time.Parse(time.RFC3339Nano, values[0])
		require.NoError(t, err, "requestedAt is an RFC 3339 time, as the flux CLI writes it")
		assert.False(t, at.Before(before.Add(-time.Second)), "asked after the merge, not before: %s", values[0])
	}
	assert.Empty(t, requested.of("main"), "another branch is not woken")
	assert.Empty(t, requested.of("dev-pinned"), "a source pinned to a commit does not follow the branch")
}

// fluxSourceRefresh: Disabled leaves Flux to its interval: the merge made while disabled wakes
// nothing, and once enabled the next merge does, once.
func TestFluxSourceRefreshDisabledLeavesFluxToItsInterval(t *testing.T) {
	f := newFixture(t)
	installFluxCRDs(t)
	f.bootstrap("dev")
	f.createGitRepository("dev", f.srv.URL("app"), map[string]any{"branch": "dev"})
	requested := f.watchRequestedAt()
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}}
		s.FluxSourceRefresh = promoterv1alpha1.FluxSourceRefreshDisabled
	})
	startPromoter(t, env.Config, t.TempDir())

	d1 := f.dryCommit("bump image to 1.1")
	f.hydrate(d1, "dev")
	f.waitEnv("dev", "promoted to d1", testenv.PromotedTo(d1))

	_, err := testenv.Update(f.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		ps.Spec.FluxSourceRefresh = promoterv1alpha1.FluxSourceRefreshEnabled
	})
	require.NoError(t, err)
	d2 := f.dryCommit("bump image to 1.2")
	f.hydrate(d2, "dev")
	f.waitEnv("dev", "promoted to d2", testenv.PromotedTo(d2))
	// Wakes run in order on one worker: a wake of d1's merge would have come before d2's.
	assert.Len(t, f.waitRequested(requested, "dev", 1), 1, "only the merge made while enabled woke the source")
}
