package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	"github.com/sluicehq/sluice/testenv"
)

// rolledBack promotes good then bad through dev and prod, then reverts prod to good as the
// rollback-controller would: a revert commit on prod-revert-<name>, merged through a PullRequest
// the promoter's PullRequest reconciler handles, and a RevertCommit whose status says Merged.
// The hydrator then renders bad onto prod-next again, as it does after any change to prod.
func rolledBack(t *testing.T, f *fixture) (good, bad string) {
	t.Helper()
	f.bootstrap("dev", "prod")
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.ActiveCommitStatuses = nil
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod"}}
	})
	startPromoter(t, env.Config, t.TempDir())
	good = f.dryCommit("good")
	f.hydrate(good, "dev", "prod")
	f.waitEnv("prod", "good promoted", testenv.PromotedTo(good))
	bad = f.dryCommit("bad")
	f.hydrate(bad, "dev", "prod")
	f.waitEnv("prod", "bad promoted", testenv.PromotedTo(bad))

	// The rollback-controller creates the RevertCommit (bad SHA known) before its pull request.
	f.markReverted("prod-bad", "prod", bad)
	revert := f.revertBranch("prod", "prod-bad", good)
	_, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Create(f.ctx, &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-bad-revert", Labels: map[string]string{rollbackv1alpha1.RevertCommitLabel: "prod-bad"}},
		Spec: promoterv1alpha1.PullRequestSpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, Title: "Revert prod to good",
			SourceBranch: "prod-revert-prod-bad", TargetBranch: "prod", ExpectedHeadSHA: revert, State: promoterv1alpha1.PullRequestMerged},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The PullRequest reconciler merges it: no promotion rule applies to a revert, which moves
	// prod backwards on purpose.
	require.NoError(t, testenv.Wait(f.ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pr, err := env.Sluice.PromoterV1alpha1().PullRequests(f.ns).Get(ctx, "prod-bad-revert", metav1.GetOptions{})
		return err == nil && pr.Status.State == promoterv1alpha1.PullRequestMerged, err
	}))
	assert.Equal(t, revert, f.repo.Branch(t, "prod"))
	f.hydrateUnannounced(bad, "prod")
	f.refresh("bad rendered again after the revert")
	return good, bad
}

// revertBranch writes a revert commit on <env>-revert-<name>, on top of env, restoring the
// manifests of dry commit to, with its hydrator note.
func (f *fixture) revertBranch(branch, name, to string) string {
	f.t.Helper()
	rb := branch + "-revert-" + name
	f.repo.SetBranch(f.t, rb, f.repo.Branch(f.t, branch))
	sha := f.repo.CommitFiles(f.t, rb, map[string]string{"manifest.yaml": "env: " + branch + "\ndry: " + to + "\n"}, "Revert "+branch+" to "+to[:7])
	f.repo.AddNote(f.t, "refs/notes/hydrator.metadata", sha, string(hydratorNote(to)))
	return sha
}

// markReverted creates a RevertCommit whose status says its revert of bad in branch merged, as
// the rollback-controller reports it.
func (f *fixture) markReverted(name, branch, bad string) {
	f.t.Helper()
	rc, err := env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).Create(f.ctx, &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"},
			ActiveBranch: branch, BadDrySHA: bad, Reason: "health failed"},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	rc.Status = rollbackv1alpha1.RevertCommitStatus{Phase: rollbackv1alpha1.RevertMerged, BadDrySHA: bad}
	_, err = env.Sluice.RollbackV1alpha1().RevertCommits(f.ns).UpdateStatus(f.ctx, rc, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

func heldAfterRollback(e promoterv1alpha1.EnvironmentStatus) bool {
	return len(e.Blocks) > 0 && e.Blocks[0].Rule == promoterv1alpha1.BlockHeldAfterRollback
}

// After a revert of prod merged, the reverted dry SHA is not promoted into prod again; a fix
// forward is, and the strategy is Ready again once it is.
func TestRevertedDrySHAIsHeldAndAFixForwardPromotes(t *testing.T) {
	f := newFixture(t)
	good, bad := rolledBack(t, f)
	prod := f.waitEnv("prod", "held after the rollback", heldAfterRollback)
	assert.Equal(t, good, prod.Active.DrySHA, "prod runs the restored commit")
	assert.Equal(t, "prod", prod.Blocks[0].Environment)
	assert.Contains(t, prod.Blocked, "RevertCommit "+f.ns+"/prod-bad reverted dry "+bad[:7])
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promotionstrategy.ReasonBlocked, readyReason(ps))
	out, err := f.kubectl("wait", "promotionstrategy/app", "--for=condition=Ready", "--timeout=1s")
	assert.Error(t, err, "a held strategy is not Ready: %s", out)
	require.NoError(t, testenv.Wait(f.ctx, 20*time.Second, func(context.Context) (bool, error) {
		for _, e := range f.events(promotionstrategy.EventPromotionHeldAfterRollback) {
			if strings.Contains(e.Message, "prod-bad") {
				return true, nil
			}
		}
		return false, nil
	}), "a PromotionHeldAfterRollback Event names the RevertCommit")

	fix := f.dryCommit("fix forward")
	f.hydrate(fix, "dev", "prod")
	// The README's script: wait for prod to run the dry commit, then for "promoted".
	out, err = f.kubectl("wait", "promotionstrategy/app", "--timeout=60s",
		`--for=jsonpath={.status.environments[?(@.branch=="prod")].active.drySHA}=`+fix)
	require.NoError(t, err, "%s", out)
	out, err = f.kubectl("wait", "promotionstrategy/app", "--for=condition=Ready", "--timeout=60s")
	require.NoError(t, err, "Ready=True once nothing is left to promote: %s", out)
	ps, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, promotionstrategy.ReasonPromoted, readyReason(ps))
}

// kubectl runs the real kubectl against the control plane, in the fixture's namespace.
func (f *fixture) kubectl(args ...string) (string, error) {
	f.t.Helper()
	bin, err := testenv.Tool("kubectl")
	require.NoError(f.t, err)
	out, err := exec.Command(bin, append([]string{"--kubeconfig", env.Kubeconfig, "-n", f.ns}, args...)...).CombinedOutput()
	return string(out), err
}

// A person lifts the hold with the annotation: the reverted dry SHA may go back into prod.
func TestLiftingTheHoldLetsTheRevertedDrySHAPromote(t *testing.T) {
	f := newFixture(t)
	_, bad := rolledBack(t, f)
	f.waitEnv("prod", "held after the rollback", heldAfterRollback)
	_, err := testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().RevertCommits(f.ns), "prod-bad", func(rc *rollbackv1alpha1.RevertCommit) {
		metav1.SetMetaDataAnnotation(&rc.ObjectMeta, rollbackv1alpha1.LiftHoldAnnotation, "the failure was the monitoring, not the change")
	})
	require.NoError(t, err)
	f.waitEnv("prod", "promoted again after the hold was lifted", testenv.ActiveOn(bad))
}

func readyReason(ps *promoterv1alpha1.PromotionStrategy) string {
	for _, c := range ps.Status.Conditions {
		if c.Type == "Ready" {
			return c.Reason
		}
	}
	return ""
}
