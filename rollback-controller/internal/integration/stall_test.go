package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
)

// Input that cannot work stalls with a message saying what to change, and a fix brings the
// revert back without a restart.
func TestBadInputStallsWithAnActionableMessage(t *testing.T) {
	f := newFixture(t)
	d0 := f.bootstrap("prod")
	never := f.dryCommit("never hydrated")
	startRollback(t, env.Config, f.ns, time.Second)

	f.revert("no-strategy", "prod", nil)
	rc := f.waitRevert("no-strategy", "stalled", stalledWith("PromotionStrategyNotFound"))
	assert.Contains(t, stalledMessage(rc), `PromotionStrategy "app" does not exist`)
	assert.Contains(t, stalledMessage(rc), "create it, or fix spec.promotionStrategyRef")
	assert.Equal(t, rollbackv1alpha1.RevertPending, rc.Status.Phase)

	f.strategy("prod")
	for _, tc := range []struct {
		name, env string
		mutate    func(*rollbackv1alpha1.RevertCommitSpec)
		reason    string
		message   string
	}{
		{"no-such-env", "qa", nil, "EnvironmentNotFound", `has no environment "qa" (it has prod): fix spec.activeBranch`},
		{"never-deployed", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.DrySHA = never }, "NotDeployed", "was never deployed to prod"},
		{"no-healthy", "prod", nil, "NoHealthyDrySHA", "name the dry SHA to go back to in spec.drySHA"},
		{"same-as-now", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) { s.DrySHA = d0 }, "AlreadyOnTarget", "prod already runs dry " + d0[:7]},
	} {
		f.revert(tc.name, tc.env, tc.mutate)
		rc := f.waitRevert(tc.name, "stalled", stalledWith(tc.reason))
		assert.Contains(t, stalledMessage(rc), tc.message, tc.name)
		assert.Empty(t, rc.Status.RevertSHA, "%s: nothing written", tc.name)
		assert.False(t, conditions.IsTrue(rc.Status.Conditions, conditions.Ready), tc.name)
	}

	// The strategy appeared: the first RevertCommit goes on to the next thing it lacks.
	f.waitRevert("no-strategy", "stalled on the healthy SHA now", stalledWith("NoHealthyDrySHA"))

	// The environment left the bad dry SHA the revert was for, for the target itself: it is
	// superseded, and nothing is written.
	f.revert("moved-on", "prod", func(s *rollbackv1alpha1.RevertCommitSpec) {
		s.DrySHA, s.BadDrySHA = d0, never
	})
	rc = f.waitRevert("moved-on", "superseded", inPhase(rollbackv1alpha1.RevertSuperseded))
	assert.Contains(t, readyCondition(rc).Message, "prod was put back on dry "+d0[:7], "it already runs the target")
	assert.Empty(t, f.repo.Branch(t, "prod-revert-moved-on"))
	require.NoError(t, testenv.Wait(f.ctx, 20*time.Second, func(context.Context) (bool, error) {
		return len(f.events("RollbackSuperseded")) == 1, nil
	}))
}

// Without the promoter's CRDs the controller keeps running, says why on every RevertCommit, and
// carries on once they are installed.
func TestMissingPromoterCRDsAreReportedThenPickedUp(t *testing.T) {
	testenv.SkipIfShort(t)
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	crds := filepath.Join(root, "api", "crds")
	own, err := testenv.Start(testenv.Options{WithoutSluiceCRDs: true, CRDPaths: []string{
		filepath.Join(crds, "rollback.sluice.dev_revertcommits.yaml"), filepath.Join(crds, "rollback.sluice.dev_rollbackpolicies.yaml"),
		filepath.Join(crds, "rollback.sluice.dev_manifestreleases.yaml"),
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = own.Stop() })
	ctx := context.Background()
	startRollback(t, own.Config, "", time.Second)

	_, err = own.Sluice.RollbackV1alpha1().RevertCommits("default").Create(ctx, &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"}, ActiveBranch: "prod"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStalled := func(reason string) *rollbackv1alpha1.RevertCommit {
		var rc *rollbackv1alpha1.RevertCommit
		require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			rc, err = own.Sluice.RollbackV1alpha1().RevertCommits("default").Get(ctx, "web", metav1.GetOptions{})
			return err == nil && stalledWith(reason)(rc), nil
		}), "stalled with %s", reason)
		return rc
	}
	// Each missing CRD is named with the chart that installs it.
	rc := waitStalled("PromoterCRDsMissing")
	assert.Contains(t, stalledMessage(rc), "the CRDs promotionstrategies.promoter.sluice.dev, pullrequests.promoter.sluice.dev, "+
		"commitstatuses.commitstatus.sluice.dev, scmrepositories.scm.sluice.dev, scmproviders.scm.sluice.dev are not installed: "+
		"install the promoter-controller and commitstatus-controller charts")

	require.NoError(t, own.InstallCRDPaths(
		filepath.Join(crds, "promoter.sluice.dev_promotionstrategies.yaml"), filepath.Join(crds, "promoter.sluice.dev_pullrequests.yaml")))
	require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		rc, err = own.Sluice.RollbackV1alpha1().RevertCommits("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && !strings.Contains(stalledMessage(rc), "promoter-controller"), nil
	}), "the message follows what is installed")
	assert.Equal(t, "PromoterCRDsMissing", conditions.Get(rc.Status.Conditions, conditions.Stalled).Reason)
	assert.Contains(t, stalledMessage(rc), "the CRDs commitstatuses.commitstatus.sluice.dev, scmrepositories.scm.sluice.dev, "+
		"scmproviders.scm.sluice.dev are not installed: install the commitstatus-controller chart")

	require.NoError(t, own.InstallCRDPaths(
		filepath.Join(crds, "commitstatus.sluice.dev_commitstatuses.yaml"),
		filepath.Join(crds, "scm.sluice.dev_scmrepositories.yaml"), filepath.Join(crds, "scm.sluice.dev_scmproviders.yaml")))
	waitStalled("PromotionStrategyNotFound")
}

func stalledMessage(rc *rollbackv1alpha1.RevertCommit) string {
	if c := conditions.Get(rc.Status.Conditions, conditions.Stalled); c != nil {
		return c.Message
	}
	return ""
}
