package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

func TestCompareURLOfEachSCM(t *testing.T) {
	repo := func(url string) *scmv1alpha1.ScmRepository {
		return &scmv1alpha1.ScmRepository{Spec: scmv1alpha1.ScmRepositorySpec{URL: url}}
	}
	for _, tc := range []struct {
		url  string
		typ  scmv1alpha1.ScmProviderType
		want string
	}{
		{"https://github.com/o/r.git", scmv1alpha1.ScmProviderGitHub, "https://github.com/o/r/compare/aaa...bbb"},
		{"git@github.com:o/r.git", scmv1alpha1.ScmProviderGitHub, "https://github.com/o/r/compare/aaa...bbb"},
		{"https://gitlab.com/g/sub/r.git", scmv1alpha1.ScmProviderGitLab, "https://gitlab.com/g/sub/r/-/compare/aaa...bbb"},
		{"ssh://git@gitlab.example:2222/g/r.git", scmv1alpha1.ScmProviderGitLab, "https://gitlab.example/g/r/-/compare/aaa...bbb"},
		{"http://127.0.0.1:3000/o/r.git", scmv1alpha1.ScmProviderGitea, "http://127.0.0.1:3000/o/r/compare/aaa...bbb"},
		{"https://codeberg.org/o/r.git", scmv1alpha1.ScmProviderForgejo, "https://codeberg.org/o/r/compare/aaa...bbb"},
		{"https://git.example/o/r.git", scmv1alpha1.ScmProviderGit, ""},
	} {
		assert.Equal(t, tc.want, LinksFor(repo(tc.url), tc.typ).Compare("aaa", "bbb"), tc.url)
	}
	gh := LinksFor(repo("https://github.com/o/r"), scmv1alpha1.ScmProviderGitHub)
	assert.Empty(t, gh.Compare("aaa", "aaa"), "no change to compare")
	assert.Empty(t, gh.Compare("", "bbb"))
}

func TestEnvironmentCardLinksTheChangeBetweenActiveAndProposed(t *testing.T) {
	gh := LinksFor(&scmv1alpha1.ScmRepository{Spec: scmv1alpha1.ScmRepositorySpec{URL: "https://github.com/o/r"}}, scmv1alpha1.ScmProviderGitHub)
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"}, {Branch: "env/prod"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{
			{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: "d1", HydratedSHA: "h1"}, Proposed: promoterv1alpha1.CommitState{DrySHA: "d2", HydratedSHA: "h2"}},
			{Branch: "env/prod", Active: promoterv1alpha1.CommitState{DrySHA: "d1", HydratedSHA: "p1"}, Proposed: promoterv1alpha1.CommitState{DrySHA: "d1", HydratedSHA: "p1"}},
		}}}
	p := BuildPipeline(ps, PipelineInput{Links: gh})
	assert.Equal(t, &Change{CompareURL: "https://github.com/o/r/compare/d1...d2",
		DiffURL: "/pipelines/team/web/diff?env=env%2Fdev&from=h1&to=h2"}, p.Environments[0].Change)
	assert.Nil(t, p.Environments[1].Change, "prod runs what it is offered")

	p = BuildPipeline(ps, PipelineInput{})
	assert.Equal(t, &Change{DiffURL: "/pipelines/team/web/diff?env=env%2Fdev&from=h1&to=h2"}, p.Environments[0].Change, "plain git: the UI's diff only")
}

func TestEachHistoryRowLinksTheChangeItsPromotionBrought(t *testing.T) {
	gh := LinksFor(&scmv1alpha1.ScmRepository{Spec: scmv1alpha1.ScmRepositorySpec{URL: "https://github.com/o/r"}}, scmv1alpha1.ScmProviderGitHub)
	now := metav1.Now()
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{Branch: "env/dev",
			History: []promoterv1alpha1.PromotionRecord{
				{DrySHA: "d2", HydratedSHA: "h2", MergeSHA: "m2", Time: now},
				{DrySHA: "d1", HydratedSHA: "h1", Time: metav1.NewTime(now.Add(-1))},
			}}}}}
	h := BuildHistory(ps, gh, nil, now.Time)
	byDry := map[string]Change{}
	for _, c := range h.Commits {
		byDry[c.DrySHA] = c.Cells[0].Reached[0].Change
	}
	assert.Equal(t, Change{CompareURL: "https://github.com/o/r/compare/d1...d2",
		DiffURL: "/pipelines/team/web/diff?env=env%2Fdev&from=h1&to=m2"}, byDry["d2"], "from the tip the promotion before it left")
	assert.Equal(t, Change{DiffURL: "/pipelines/team/web/diff?env=env%2Fdev&to=h1"}, byDry["d1"], "the oldest kept: its commit's own change")
}
