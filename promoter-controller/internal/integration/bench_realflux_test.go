package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// fluxInterval is a realistic interval for Flux's sources and Kustomizations (Flux's own
// examples use 1m to 10m).
const fluxInterval = time.Minute

// fluxBench is a namespace where the promoter promotes into dev and real Flux applies dev.
type fluxBench struct {
	b    *testing.B
	ns   string
	repo *gittest.Repo
	ctx  context.Context
}

func configMapYAML(dry string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  dry: %q\n", dry)
}

// newFluxBench starts the promoter and real source-controller and kustomize-controller over a
// fresh repository, dev deployed by its own GitRepository and Kustomization at fluxInterval.
func newFluxBench(b *testing.B, refresh promoterv1alpha1.FluxSourceRefresh) *fluxBench {
	b.Helper()
	fb := &fluxBench{b: b, ctx: context.Background(), ns: fmt.Sprintf("fluxbench-%d", time.Now().UnixNano())}
	paths, err := flux.CRDPaths()
	must(b, err)
	must(b, env.InstallCRDPaths(paths...))
	must(b, createNamespace(fb.ctx, fb.ns))
	var url string
	fb.repo, url = gittest.NewGitServedRepo(b, "app")
	must(b, createPlainGitRepo(fb.ctx, fb.ns, "app", url))
	d0 := fb.repo.CommitFiles(b, "main", map[string]string{"values.yaml": "n: 0\n"}, "initial")
	fb.repo.CommitFiles(b, "dev", map[string]string{"hydrator.metadata": string(hydratorNote(d0)), "app.yaml": configMapYAML(d0)}, "initial dev")
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(fb.ns).Create(fb.ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}}, FluxSourceRefresh: refresh},
	}, metav1.CreateOptions{})
	must(b, err)
	flux.Start(b, env, flux.Options{Namespace: fb.ns})
	flux.CreateGitRepository(b, env, fb.ns, "dev", flux.GitRepositorySpec{URL: url, Branch: "dev", Interval: fluxInterval})
	flux.CreateKustomization(b, env, fb.ns, "dev", flux.KustomizationSpec{GitRepository: "dev", TargetNamespace: fb.ns, Interval: fluxInterval})
	fb.waitConfigMap(d0)
	startPromoter(b, env.Config, b.TempDir())
	return fb
}

func (fb *fluxBench) waitConfigMap(dry string) {
	fb.b.Helper()
	must(fb.b, testenv.Wait(fb.ctx, fluxInterval+flux.ApplyTimeout, func(ctx context.Context) (bool, error) {
		cm, err := env.Kube.CoreV1().ConfigMaps(fb.ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && cm.Data["dry"] == dry, nil
	}))
}

// mergeToApplied promotes the n-th dry commit into dev and returns the time from the promoter's
// merge (dev seen moving in git) to its ConfigMap being in the cluster, applied by Flux.
func (fb *fluxBench) mergeToApplied(n int) time.Duration {
	b := fb.b
	dry := fb.repo.CommitFiles(b, "main", map[string]string{"values.yaml": fmt.Sprintf("n: %d\n", n)}, fmt.Sprintf("dry %d", n))
	before := fb.repo.Branch(b, "dev")
	fb.repo.SetBranch(b, "dev-next", before)
	next := fb.repo.CommitFiles(b, "dev-next", map[string]string{"app.yaml": configMapYAML(dry)}, "hydrate "+dry[:7])
	fb.repo.AddNote(b, "refs/notes/hydrator.metadata", next, string(hydratorNote(dry)))
	_, err := testenv.Update(fb.ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(fb.ns), "app", func(ps *promoterv1alpha1.PromotionStrategy) {
		metav1.SetMetaDataAnnotation(&ps.ObjectMeta, promoterv1alpha1.RefreshAnnotation, dry)
	})
	must(b, err)
	deadline := time.Now().Add(flux.ApplyTimeout)
	for fb.repo.Branch(b, "dev") == before {
		if time.Now().After(deadline) {
			b.Fatalf("dev did not move from %s: the promoter did not merge dry %d", before, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	merged := time.Now()
	fb.waitConfigMap(dry)
	return time.Since(merged)
}

// BenchmarkMergeToAppliedByFlux is the time from the promoter's merge into dev to real Flux
// (source-controller and kustomize-controller v1.9.6, built from their modules) having applied
// it, with a 1m interval: with the requestedAt annotation the promoter sets after the merge, and,
// as the baseline, fluxSourceRefresh: Disabled, where Flux learns of the merge at its interval.
// mergeTime has a second's resolution, so each figure is within a second.
func BenchmarkMergeToAppliedByFlux(b *testing.B) {
	for _, refresh := range []promoterv1alpha1.FluxSourceRefresh{promoterv1alpha1.FluxSourceRefreshEnabled, promoterv1alpha1.FluxSourceRefreshDisabled} {
		b.Run("fluxSourceRefresh="+string(refresh), func(b *testing.B) {
			fb := newFluxBench(b, refresh)
			var total time.Duration
			n := 0
			for b.Loop() {
				n++
				d := fb.mergeToApplied(n)
				b.Logf("merge %d applied %.2fs after the merge", n, d.Seconds())
				total += d
			}
			b.ReportMetric(total.Seconds()/float64(n), "s/merge-to-applied")
		})
	}
}
