package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// The API server enforces the PullRequest rules: branches are immutable, and merging needs the
// expected head.
func TestPullRequestCRDRules(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	ns := fmt.Sprintf("crd-%d", time.Now().UnixNano())
	require.NoError(t, createNamespace(ctx, ns))
	client := env.Sluice.PromoterV1alpha1().PullRequests(ns)
	pr, err := client.Create(ctx, &promoterv1alpha1.PullRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: promoterv1alpha1.PullRequestSpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, Title: "t", SourceBranch: "dev-next", TargetBranch: "dev",
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, promoterv1alpha1.PullRequestOpen, pr.Spec.State, "state defaults to open")

	for name, tc := range map[string]struct {
		field  string
		mutate func(*promoterv1alpha1.PullRequest)
	}{
		"sourceBranch is immutable":   {"spec.sourceBranch:", func(p *promoterv1alpha1.PullRequest) { p.Spec.SourceBranch = "other" }},
		"targetBranch is immutable":   {"spec.targetBranch:", func(p *promoterv1alpha1.PullRequest) { p.Spec.TargetBranch = "other" }},
		"expectedHeadSHA is required": {"spec.expectedHeadSHA:", func(p *promoterv1alpha1.PullRequest) { p.Spec.State = promoterv1alpha1.PullRequestMerged }},
	} {
		t.Run(name, func(t *testing.T) {
			next := pr.DeepCopy()
			tc.mutate(next)
			_, err := client.Update(ctx, next, metav1.UpdateOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), name)
			assert.Contains(t, err.Error(), tc.field, "the error names the field")
		})
	}
	next := pr.DeepCopy()
	next.Spec.State, next.Spec.ExpectedHeadSHA = promoterv1alpha1.PullRequestMerged, "0123456789abcdef0123456789abcdef01234567"
	_, err = client.Update(ctx, next, metav1.UpdateOptions{})
	assert.NoError(t, err, "merging with an expected head is accepted")

	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "dup"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "dev"}},
		},
	}, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "environment branches must be unique")
}
