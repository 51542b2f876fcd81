package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/testenv"
)

// With only its own CRDs installed, the promoter still becomes ready and says, on each object,
// which CRDs are missing and which chart installs them; once they are installed it goes on,
// without a restart.
func TestMissingCRDsAreReportedThenPickedUp(t *testing.T) {
	testenv.SkipIfShort(t)
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	crd := func(name string) string { return filepath.Join(root, "api", "crds", name+".yaml") }
	own, err := testenv.Start(testenv.Options{WithoutSluiceCRDs: true, CRDPaths: []string{
		crd("promoter.sluice.dev_promotionstrategies"), crd("promoter.sluice.dev_proposedcommits"), crd("promoter.sluice.dev_pullrequests"),
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = own.Stop() })
	ctx := context.Background()
	startPromoter(t, own.Config, t.TempDir())

	const ns = "default"
	strategies, pullRequests := own.Sluice.PromoterV1alpha1().PromotionStrategies(ns), own.Sluice.PromoterV1alpha1().PullRequests(ns)
	_, err = strategies.Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod", Gates: &promoterv1alpha1.GateSelector{
				Refs: []promoterv1alpha1.GateReference{{Name: "prod-freeze"}}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = pullRequests.Create(ctx, &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "revert"},
		Spec: promoterv1alpha1.PullRequestSpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, Title: "Revert",
			SourceBranch: "prod-revert", TargetBranch: "prod"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	stalledWith := func(get func(context.Context) ([]metav1.Condition, error), reason, message string) {
		t.Helper()
		var last []metav1.Condition
		require.NoError(t, testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			var err error
			last, err = get(ctx)
			c := conditions.Get(last, conditions.Stalled)
			return c != nil && c.Reason == reason && c.Message != "" && strings.Contains(c.Message, message), err
		}), "Stalled %s containing %q; last conditions %+v", reason, message, last)
	}
	strategy := func(ctx context.Context) ([]metav1.Condition, error) {
		ps, err := strategies.Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return ps.Status.Conditions, nil
	}
	pullRequest := func(ctx context.Context) ([]metav1.Condition, error) {
		pr, err := pullRequests.Get(ctx, "revert", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return pr.Status.Conditions, nil
	}

	stalledWith(strategy, "CRDMissing", "the CRDs scmrepositories.scm.sluice.dev, scmproviders.scm.sluice.dev, gates.gating.sluice.dev are not installed: "+
		"install the commitstatus-controller and gate-controller charts")
	stalledWith(pullRequest, "CRDMissing", "the CRDs scmrepositories.scm.sluice.dev, scmproviders.scm.sluice.dev are not installed: "+
		"install the commitstatus-controller chart")
	events, err := own.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=CRDMissing"})
	require.NoError(t, err)
	require.NotEmpty(t, events.Items, "the stalls are announced")
	for _, e := range events.Items {
		assert.Equal(t, corev1.EventTypeWarning, e.Type)
	}

	require.NoError(t, own.InstallCRDPaths(crd("scm.sluice.dev_scmrepositories"), crd("scm.sluice.dev_scmproviders")))
	stalledWith(strategy, "CRDMissing", "the CRD gates.gating.sluice.dev is not installed: install the gate-controller chart")
	stalledWith(pullRequest, "InvalidConfiguration", `ScmRepository "app" does not exist`)

	require.NoError(t, own.InstallCRDPaths(crd("gating.sluice.dev_gates")))
	stalledWith(strategy, "InvalidConfiguration", `ScmRepository "app" does not exist`)
}
