package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
)

const shardLabel = "sluice.dev/shard"

// shardedStrategy creates a PromotionStrategy named name in shard, tracking sha.
func shardedStrategy(t *testing.T, ns, name, shard, sha string) *promoterv1alpha1.PromotionStrategy {
	t.Helper()
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(context.Background(), &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{shardLabel: shard}},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "staging"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return setTracked(t, ps, sha, sha)
}

func startShard(t *testing.T, ns, shard string) *running {
	return startController(t, controllerOptions{
		mutate: func(o *options.Options) {
			o.Namespace = ns
			o.WatchLabelSelector = shardLabel + "=" + shard
			o.LeaderElectionID = "commitstatus-controller-" + shard
		},
		setup: func(c *setup.Config) { c.ImportPollInterval = time.Second },
	})
}

// importOf returns the predicate "strategy's one import is in phase, labelled for shard".
func importOf(ps *promoterv1alpha1.PromotionStrategy, shard string, phase commitstatusv1alpha1.CommitStatusPhase) func([]commitstatusv1alpha1.CommitStatus) bool {
	return func(l []commitstatusv1alpha1.CommitStatus) bool {
		for _, cs := range l {
			if len(cs.OwnerReferences) == 1 && cs.OwnerReferences[0].UID == ps.UID {
				return cs.Labels[shardLabel] == shard && cs.Spec.Phase == phase
			}
		}
		return false
	}
}

// Two commitstatus-controllers shard by label. Each imports only for the strategies of its
// shard, and its imports carry the strategy's shard label: so they are in its own cache, and it
// follows the SCM's new verdicts (an import outside the cache would be created again, refused
// as existing, and never updated). A strategy moved to the other shard takes its imports along.
func TestEachShardImportsForItsOwnStrategiesUnderTheirShardLabel(t *testing.T) {
	testenv.SkipIfShort(t)
	installAllCRDs(t)
	ctx := context.Background()
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	ns := githubSetup(t, srv, nil)
	api := shardedStrategy(t, ns, "api", "b", importSHA3)
	web := shardedStrategy(t, ns, "web", "a", sha1)
	for _, sha := range []string{sha1, importSHA3} {
		srv.AddCheckRun("acme", "app", scmtest.GitHubCheckRun{HeadSHA: sha, Name: "ci/lint", Status: "completed", Conclusion: "failure"})
	}

	a := startShard(t, ns, "a")
	waitImported(t, ns, "shard a imports web's check under its own label", importOf(web, "a", commitstatusv1alpha1.CommitStatusFailure))
	_, err := a.m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies().Lister().PromotionStrategies(ns).Get("api")
	assert.True(t, apierrors.IsNotFound(err), "shard a does not watch shard b's strategy: %v", err)
	for _, req := range srv.Requests() {
		assert.NotContains(t, req.Path, importSHA3, "shard a read nothing of shard b's commits")
	}
	assert.False(t, importOf(api, "b", commitstatusv1alpha1.CommitStatusFailure)(waitImported(t, ns, "list", func([]commitstatusv1alpha1.CommitStatus) bool { return true })))

	startShard(t, ns, "b")
	waitImported(t, ns, "shard b imports api's check under its own label", importOf(api, "b", commitstatusv1alpha1.CommitStatusFailure))

	srv.AddCheckRun("acme", "app", scmtest.GitHubCheckRun{HeadSHA: sha1, Name: "ci/lint", Status: "completed", Conclusion: "success"})
	waitImported(t, ns, "shard a follows web's re-run on the import it holds", importOf(web, "a", commitstatusv1alpha1.CommitStatusSuccess))

	_, err = testenv.Update(ctx, env.Sluice.PromoterV1alpha1().PromotionStrategies(ns), "web", func(ps *promoterv1alpha1.PromotionStrategy) {
		ps.Labels[shardLabel] = "b"
	})
	require.NoError(t, err)
	waitImported(t, ns, "web moved to shard b: b takes its import over", importOf(web, "b", commitstatusv1alpha1.CommitStatusSuccess))
	srv.AddCheckRun("acme", "app", scmtest.GitHubCheckRun{HeadSHA: sha1, Name: "ci/lint", Status: "completed", Conclusion: "failure"})
	waitImported(t, ns, "shard b follows web's next run", importOf(web, "b", commitstatusv1alpha1.CommitStatusFailure))
	list := waitImported(t, ns, "list", func(l []commitstatusv1alpha1.CommitStatus) bool { return true })
	assert.Len(t, list, 2, "one import per strategy, none duplicated by the move: %v", names(list))
}

func names(l []commitstatusv1alpha1.CommitStatus) string {
	out := make([]string, 0, len(l))
	for _, cs := range l {
		out = append(out, cs.Name)
	}
	return strings.Join(out, ",")
}
