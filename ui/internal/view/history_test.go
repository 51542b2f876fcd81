package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// The history places each promotion and revert in its commit's row and environment's column,
// newest commit first, and feeds each environment's own records to its figures.
func TestBuildHistory(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(h int) metav1.Time { return metav1.NewTime(now.Add(time.Duration(-h) * time.Hour)) }
	commitOf := func(h int) *metav1.Time { t := at(h); return &t }
	ps := &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{
			{Branch: "dev"}, {Branch: "prod"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{
			{Branch: "dev", Active: promoterv1alpha1.CommitState{DrySHA: "b", CommitTime: commitOf(12), Subject: "b: new checkout"},
				History: []promoterv1alpha1.PromotionRecord{{DrySHA: "b", Time: at(10)}, {DrySHA: "a", Time: at(30)}}},
			{Branch: "prod", Active: promoterv1alpha1.CommitState{DrySHA: "a", CommitTime: commitOf(40)},
				History: []promoterv1alpha1.PromotionRecord{{DrySHA: "b", Time: at(6), PullRequestURL: "https://scm/pr/7"}, {DrySHA: "a", Time: at(20)}}},
		}},
	}
	mergeTime := at(2)
	reverts := []*rollbackv1alpha1.RevertCommit{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-prod-x"},
			Spec:   rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "web"}, ActiveBranch: "prod"},
			Status: rollbackv1alpha1.RevertCommitStatus{Phase: rollbackv1alpha1.RevertMerged, BadDrySHA: "b", TargetDrySHA: "a", MergeTime: &mergeTime}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-prod"},
			Spec:   rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "other"}, ActiveBranch: "prod"},
			Status: rollbackv1alpha1.RevertCommitStatus{Phase: rollbackv1alpha1.RevertMerged, BadDrySHA: "a"}},
	}
	h := BuildHistory(ps, Links{}, reverts, now)

	assert.Equal(t, []string{"dev", "prod"}, h.Environments)
	require.Len(t, h.Commits, 2)
	b, a := h.Commits[0], h.Commits[1]
	assert.Equal(t, "b", b.DrySHA, "newest first")
	assert.Equal(t, "b: new checkout", b.Subject)
	assert.Equal(t, []Reach{{Time: at(10).Time}}, b.Cells[0].Reached)
	assert.Equal(t, []Reach{{Time: at(6).Time, PullRequestURL: "https://scm/pr/7"}}, b.Cells[1].Reached)
	assert.True(t, b.Cells[0].Active)
	require.Len(t, b.Cells[1].Reverted, 1)
	assert.Equal(t, "web-prod-x", b.Cells[1].Reverted[0].Name)
	assert.Empty(t, b.Cells[0].Reverted, "the revert was of prod")
	require.Len(t, a.Cells[1].Restored, 1, "prod went back to a")
	assert.True(t, a.Cells[1].Active)
	assert.Empty(t, a.Cells[1].Reverted, "another strategy's revert is not this one's")

	require.Len(t, h.DORA, 2)
	dev, prod := h.DORA[0], h.DORA[1]
	assert.Equal(t, "dev", dev.Branch)
	assert.Equal(t, 2, dev.Deployments)
	assert.Zero(t, dev.Failed)
	assert.Equal(t, 2, prod.Deployments)
	assert.Equal(t, 1, prod.Failed)
	assert.Equal(t, 4*time.Hour, prod.TimeToRestore, "from b reaching prod to the revert's merge")
	assert.Equal(t, 2, prod.LeadTimeSamples, "a and b have a commit time")
	assert.Equal(t, (20*time.Hour+6*time.Hour)/2, prod.LeadTime)
}
