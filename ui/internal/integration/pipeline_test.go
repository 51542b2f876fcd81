package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

const (
	oldSHA = "1111111111111111111111111111111111111111"
	newSHA = "2222222222222222222222222222222222222222"
)

// TestPromotionMovesLiveOnThePipelinePage writes a promotion's status as the promoter does,
// dev, then staging, then prod, and sees each step on the open page without a reload.
func TestPromotionMovesLiveOnThePipelinePage(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	envs := []string{"env/dev", "env/staging", "env/prod"}
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "repo"}, DryBranch: "main"}}
	for _, b := range envs {
		ps.Spec.Environments = append(ps.Spec.Environments, promoterv1alpha1.Environment{Branch: b})
	}
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, ps, metav1.CreateOptions{})
	require.NoError(t, err)
	// Every environment runs the old commit; the new one is proposed to dev.
	statuses := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns)
	for i, b := range envs {
		st := promoterv1alpha1.EnvironmentStatus{Branch: b,
			Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, HydratedSHA: "a1" + oldSHA[2:], Phase: "success", Subject: "checkout: retry payments once",
				CommitStatuses: []promoterv1alpha1.CommitStatusPhase{{Key: "health", Phase: "success"}, {Key: "smoke-tests", Phase: "success"}}},
			Proposed: promoterv1alpha1.CommitState{DrySHA: newSHA, HydratedSHA: "b2" + newSHA[2:], Phase: "pending",
				CommitStatuses: []promoterv1alpha1.CommitStatusPhase{{Key: "ci", Phase: "pending"}}},
			LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: oldSHA, Time: metav1.Now()}},
			PullRequest:        &promoterv1alpha1.PullRequestReference{Name: "checkout-" + strings.TrimPrefix(b, "env/"), State: promoterv1alpha1.PullRequestOpen},
		}
		if i > 0 {
			st.Blocked = fmt.Sprintf("%s is not active on %s yet", envs[i-1], newSHA[:7])
			st.Blocks = []promoterv1alpha1.PromotionBlock{{Rule: promoterv1alpha1.BlockEarlierEnvironmentActive, Environment: envs[i-1], Message: st.Blocked}}
		}
		ps.Status.Environments = append(ps.Status.Environments, st)
	}
	_, err = statuses.UpdateStatus(ctx, ps, metav1.UpdateOptions{})
	require.NoError(t, err)

	b := browser(t)
	signIn(b, t, url)
	page := url + "/pipelines/" + ns + "/checkout"
	within(b, t, chromedp.Navigate(page), chromedp.WaitVisible(css(`#live.on`)))
	read(b, t, chromedp.Evaluate[bool](`window.sluiceNotReloaded = true`))
	blocked := read(b, t, chromedp.Text(css(`[data-branch="env/staging"] .blocked`)))
	assert.Contains(t, blocked, "env/dev is not active on 2222222 yet", "the promoter's own words")

	for i, branch := range envs {
		_, err := testenv.Update(ctx, testenvStatus{statuses}, "checkout", func(p *promoterv1alpha1.PromotionStrategy) {
			p.Status.Environments[i].Active.DrySHA = newSHA
			p.Status.Environments[i].Active.Subject = "checkout: new payment provider"
			p.Status.Environments[i].PullRequest.State = promoterv1alpha1.PullRequestMerged
			p.Status.Environments[i].Blocked, p.Status.Environments[i].Blocks = "", nil
		})
		require.NoError(t, err)
		within(b, t, chromedp.WaitVisible(css(fmt.Sprintf(`[data-branch="%s"][data-active="%s"]`, branch, newSHA))))
		if branch == "env/staging" {
			screenshot(b, t, "pipeline")
		}
	}
	notReloaded := read(b, t, chromedp.Evaluate[bool](`window.sluiceNotReloaded === true`))
	assert.True(t, notReloaded, "the page changed in place: it was never reloaded")

	// The list links each environment to its place on the strategy's page. The search names the
	// namespace too: other tests in this package run strategies called checkout.
	within(b, t, chromedp.Navigate(url+"/pipelines?q="+ns+"/checkout"))
	href := read(b, t, chromedp.AttributeValue(css(`a.chip`), "href")).Value
	assert.True(t, strings.HasSuffix(href, "/pipelines/"+ns+"/checkout#env-env-dev"), href)
	screenshot(b, t, "pipelines")
}

// testenvStatus updates through the status subresource, as the promoter writes.
type testenvStatus struct {
	c interface {
		Get(context.Context, string, metav1.GetOptions) (*promoterv1alpha1.PromotionStrategy, error)
		UpdateStatus(context.Context, *promoterv1alpha1.PromotionStrategy, metav1.UpdateOptions) (*promoterv1alpha1.PromotionStrategy, error)
	}
}

func (s testenvStatus) Get(ctx context.Context, name string, o metav1.GetOptions) (*promoterv1alpha1.PromotionStrategy, error) {
	return s.c.Get(ctx, name, o)
}

func (s testenvStatus) Update(ctx context.Context, p *promoterv1alpha1.PromotionStrategy, o metav1.UpdateOptions) (*promoterv1alpha1.PromotionStrategy, error) {
	return s.c.UpdateStatus(ctx, p, o)
}
