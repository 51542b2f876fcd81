package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
	"github.com/sluicehq/sluice/ui/internal/view"
)

// TestHistoryPageShowsCommitsEnvironmentsAndDORA: the history page, reached from the pipeline
// page with the keyboard, places each promotion in its commit's row and environment's column,
// marks the reverted one, shows each environment's figures as ComputeDORA gives them for what
// the statuses hold, and follows a new promotion live, without a reload.
func TestHistoryPageShowsCommitsEnvironmentsAndDORA(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	commitTime := func(d time.Duration) *metav1.Time { t := at(d); return &t }
	const thirdSHA = "3333333333333333333333333333333333333333"

	strategies := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns)
	ps, err := strategies.Create(ctx, &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout"},
		Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "repo"}, DryBranch: "main",
			Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"}, {Branch: "env/staging"}, {Branch: "env/prod"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// old reached every environment; new reached dev and staging, then prod, where it was
	// reverted back to old.
	record := func(sha string, d time.Duration) promoterv1alpha1.PromotionRecord {
		return promoterv1alpha1.PromotionRecord{DrySHA: sha, Time: at(d)}
	}
	active := func(sha string, d time.Duration) promoterv1alpha1.CommitState {
		return promoterv1alpha1.CommitState{DrySHA: sha, CommitTime: commitTime(d), Subject: "checkout " + sha[:3]}
	}
	ps.Status.Environments = []promoterv1alpha1.EnvironmentStatus{
		{Branch: "env/dev", Active: active(newSHA, 30*time.Hour), History: []promoterv1alpha1.PromotionRecord{record(newSHA, 29*time.Hour), record(oldSHA, 70*time.Hour)}},
		{Branch: "env/staging", Active: active(newSHA, 30*time.Hour), History: []promoterv1alpha1.PromotionRecord{record(newSHA, 26*time.Hour), record(oldSHA, 60*time.Hour)}},
		{Branch: "env/prod", Active: active(oldSHA, 80*time.Hour), History: []promoterv1alpha1.PromotionRecord{record(newSHA, 5*time.Hour), record(oldSHA, 50*time.Hour)}},
	}
	ps, err = strategies.UpdateStatus(ctx, ps, metav1.UpdateOptions{})
	require.NoError(t, err)
	reverts := env.Sluice.RollbackV1alpha1().RevertCommits(ns)
	rc, err := reverts.Create(ctx, &rollbackv1alpha1.RevertCommit{ObjectMeta: metav1.ObjectMeta{Name: "checkout-prod-1"},
		Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "checkout"},
			ActiveBranch: "env/prod", Reason: "checkout errors"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	merged := at(3 * time.Hour)
	rc.Status = rollbackv1alpha1.RevertCommitStatus{Phase: rollbackv1alpha1.RevertMerged, BadDrySHA: newSHA, TargetDrySHA: oldSHA, MergeTime: &merged}
	rc, err = reverts.UpdateStatus(ctx, rc, metav1.UpdateOptions{})
	require.NoError(t, err)

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.Focus(css(`#history-link`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(css(`#history`)), chromedp.WaitVisible(css(`#live.on`)))
	location := read(b, t, chromedp.Location())
	assert.Equal(t, url+"/pipelines/"+ns+"/checkout/history", location, "a deep link, reached with the keyboard")
	read(b, t, chromedp.Evaluate[bool](`window.sluiceNotReloaded = true`))

	rows := read(b, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#history tbody tr')].map(r => r.id)`))
	assert.Equal(t, []string{"commit-" + newSHA, "commit-" + oldSHA}, rows, "one row per dry commit, newest first")
	reverted := read(b, t, chromedp.Text(css(`#commit-`+newSHA+` td[data-branch="env/prod"]`)))
	assert.Contains(t, reverted, "reverted")
	assert.Contains(t, reverted, "checkout-prod-1")
	restored := read(b, t, chromedp.Text(css(`#commit-`+oldSHA+` td[data-branch="env/prod"]`)))
	assert.Contains(t, restored, "restored by checkout-prod-1")
	assert.Contains(t, restored, "running")
	staging := read(b, t, chromedp.Text(css(`#commit-`+newSHA+` td[data-branch="env/staging"]`)))
	reached := read(b, t, chromedp.Evaluate[string](`document.querySelector('#commit-`+newSHA+` td[data-branch="env/staging"] time').title`))
	assert.Equal(t, at(26*time.Hour).UTC().Format("2006-01-02 15:04 UTC"), reached, "when new reached staging, in UTC on hover")
	assert.NotContains(t, staging, "reverted", "the revert was of prod only")

	requireProdDORA(b, t, ps, rc)
	screenshot(b, t, "history")

	// A third commit reaches dev: a new row, on the open page.
	_, err = testenv.Update(ctx, testenvStatus{strategies}, "checkout", func(p *promoterv1alpha1.PromotionStrategy) {
		p.Status.Environments[0].History = append([]promoterv1alpha1.PromotionRecord{record(thirdSHA, time.Minute)}, p.Status.Environments[0].History...)
		p.Status.Environments[0].Active = active(thirdSHA, time.Hour)
	})
	require.NoError(t, err)
	within(b, t, chromedp.WaitVisible(css(fmt.Sprintf(`#commit-%s td[data-branch="env/dev"] .badge.ok`, thirdSHA))))
	rows = read(b, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#history tbody tr')].map(r => r.id)`))
	assert.Equal(t, "commit-"+thirdSHA, rows[0], "the newest commit comes first")
	assert.Contains(t, read(b, t, chromedp.Text(css(`#dora tr[data-branch="env/dev"] [data-figure="frequency"]`))), "(3 since")
	notReloaded := read(b, t, chromedp.Evaluate[bool](`window.sluiceNotReloaded === true`))
	assert.True(t, notReloaded, "the page changed in place")
}

// requireProdDORA checks that the page shows prod's figures as ComputeDORA makes them from what
// the statuses hold, as a person reads them.
func requireProdDORA(b context.Context, t *testing.T, ps *promoterv1alpha1.PromotionStrategy, rc *rollbackv1alpha1.RevertCommit) {
	t.Helper()
	want := view.BuildHistory(ps, view.Links{}, []*rollbackv1alpha1.RevertCommit{rc}, time.Now()).DORA[2]
	require.Equal(t, "env/prod", want.Branch)
	require.Equal(t, 1, want.Failed, "the statuses say prod's promotion of new failed")
	figure := func(name string) string {
		return read(b, t, chromedp.Text(css(`#dora tr[data-branch="env/prod"] [data-figure="`+name+`"]`)))
	}
	assert.Contains(t, figure("failure-rate"), "50% (1 of 2 reverted)")
	assert.Contains(t, figure("restore"), view.Duration(want.TimeToRestore)+" (median of 1)")
	assert.Equal(t, 2*time.Hour, want.TimeToRestore, "from new reaching prod to the revert's merge")
	assert.Contains(t, figure("lead-time"), view.Duration(want.LeadTime)+" (median of 2)")
}
