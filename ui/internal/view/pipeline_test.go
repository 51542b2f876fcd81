package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

func branches(envs []Environment) []string {
	var out []string
	for _, e := range envs {
		out = append(out, e.Branch)
	}
	return out
}

func TestEnvironmentsAreInDAGOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		envs []promoterv1alpha1.Environment
		want []string
	}{
		{"linear keeps spec order", []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "staging"}, {Branch: "prod"}}, []string{"dev", "staging", "prod"}},
		{"listed out of order", []promoterv1alpha1.Environment{
			{Branch: "dev"}, {Branch: "prod", After: []string{"staging"}}, {Branch: "staging", After: []string{"dev"}},
		}, []string{"dev", "staging", "prod"}},
		{"fan-in after two", []promoterv1alpha1.Environment{
			{Branch: "dev"}, {Branch: "prod", After: []string{"eu", "us"}}, {Branch: "eu", After: []string{"dev"}}, {Branch: "us", After: []string{"dev"}},
		}, []string{"dev", "eu", "us", "prod"}},
		{"a cycle keeps spec order", []promoterv1alpha1.Environment{
			{Branch: "a", After: []string{"b"}}, {Branch: "b", After: []string{"a"}},
		}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := &promoterv1alpha1.PromotionStrategy{Spec: promoterv1alpha1.PromotionStrategySpec{Environments: tc.envs}}
			assert.Equal(t, tc.want, branches(BuildPipeline(ps, PipelineInput{Gate: noGate}).Environments))
			var summary []string
			for _, e := range Summarize(ps).Environments {
				summary = append(summary, e.Branch)
			}
			assert.Equal(t, tc.want, summary, "the list shows the same order")
		})
	}
}

func noGate(string, string) *gatingv1alpha1.Gate { return nil }

func TestEnvironmentShowsChecksGatesPullRequestAndReverts(t *testing.T) {
	next := metav1.NewTime(time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC))
	manual := false
	ps := &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{
			{Branch: "prod", AutoMerge: &manual, Gates: &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "freeze"}, {Name: "gone", Namespace: "ops"}}}},
		}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{
			Branch: "prod",
			Active: promoterv1alpha1.CommitState{DrySHA: "aaaa111", HydratedSHA: "bbbb222",
				CommitStatuses: []promoterv1alpha1.CommitStatusPhase{{Key: "health", Phase: "failure"}, {Key: "ci", Phase: "success"}}},
			PullRequest: &promoterv1alpha1.PullRequestReference{Name: "web-prod", State: promoterv1alpha1.PullRequestOpen, URL: "https://git.example/pr/7"},
			Blocked:     "gate team/freeze is closed",
			Blocks:      []promoterv1alpha1.PromotionBlock{{Rule: promoterv1alpha1.BlockGates, Environment: "prod", Message: "gate team/freeze is closed"}},
		}}},
	}
	in := PipelineInput{
		Links: LinksFor(&scmv1alpha1.ScmRepository{Spec: scmv1alpha1.ScmRepositorySpec{URL: "git@git.example:team/web.git"}}, scmv1alpha1.ScmProviderGitHub),
		Gate: func(ns, name string) *gatingv1alpha1.Gate {
			if ns == "team" && name == "freeze" {
				return &gatingv1alpha1.Gate{Status: gatingv1alpha1.GateStatus{Open: false, Reason: "Window", Message: "weekend", NextTransitionTime: &next}}
			}
			return nil
		},
		CommitStatuses: []*commitstatusv1alpha1.CommitStatus{
			{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "health"}},
				Spec: commitstatusv1alpha1.CommitStatusSpec{SHA: "bbbb222", Description: "2 of 3 Deployments failed", URL: "https://grafana/x"}},
			{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{commitstatusv1alpha1.KeyLabel: "health"}},
				Spec: commitstatusv1alpha1.CommitStatusSpec{SHA: "other", Description: "another commit"}},
		},
		RevertCommits: []*rollbackv1alpha1.RevertCommit{
			{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "web"}, ActiveBranch: "prod"},
				Status: rollbackv1alpha1.RevertCommitStatus{Phase: rollbackv1alpha1.RevertOpen, TargetDrySHA: "cccc"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "other-env"}, Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "web"}, ActiveBranch: "dev"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "failed"}, Spec: rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "web"}, ActiveBranch: "prod"},
				Status: rollbackv1alpha1.RevertCommitStatus{Phase: rollbackv1alpha1.RevertFailed}},
		},
	}
	env := BuildPipeline(ps, in).Environments[0]
	assert.Equal(t, "https://git.example/team/web/commit/aaaa111", env.Active.DryURL)
	assert.Equal(t, []Check{{Key: "health", Phase: "failure", Description: "2 of 3 Deployments failed", URL: "https://grafana/x"}, {Key: "ci", Phase: "success"}}, env.Active.Checks)
	assert.Equal(t, &PullRequest{Name: "web-prod", State: "open", URL: "https://git.example/pr/7", WaitsForPerson: true}, env.PullRequest)
	assert.Equal(t, []GateHold{{Namespace: "team", Name: "freeze", Reason: "Window", Message: "weekend", NextChange: &next.Time}, {Namespace: "ops", Name: "gone", Missing: true}}, env.Gates)
	assert.Equal(t, []Revert{{Name: "r1", Phase: "Open", TargetDrySHA: "cccc"}}, env.Reverts)
	assert.Equal(t, "gate team/freeze is closed", env.Blocked)
}

func TestLinks(t *testing.T) {
	repo := func(url string) *scmv1alpha1.ScmRepository {
		return &scmv1alpha1.ScmRepository{Spec: scmv1alpha1.ScmRepositorySpec{URL: url}}
	}
	for _, tc := range []struct {
		url  string
		typ  scmv1alpha1.ScmProviderType
		want string
	}{
		{"https://github.com/o/r.git", scmv1alpha1.ScmProviderGitHub, "https://github.com/o/r/commit/abc"},
		{"ssh://git@gitlab.com:22/g/sub/r.git", scmv1alpha1.ScmProviderGitLab, "https://gitlab.com/g/sub/r/-/commit/abc"},
		{"git@gitea.local:o/r.git", scmv1alpha1.ScmProviderGitea, "https://gitea.local/o/r/commit/abc"},
		{"http://127.0.0.1:3000/o/r.git", scmv1alpha1.ScmProviderGitea, "http://127.0.0.1:3000/o/r/commit/abc"},
		{"https://git.example/o/r.git", scmv1alpha1.ScmProviderGit, ""},
	} {
		assert.Equal(t, tc.want, LinksFor(repo(tc.url), tc.typ).Commit("abc"), tc.url)
	}
	assert.Empty(t, LinksFor(nil, "").Commit("abc"))
}

func TestUntil(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		-time.Second: "now", 40 * time.Second: "in 40s", 5*time.Minute + 20*time.Second: "in 5m",
		2*time.Hour + 5*time.Minute: "in 2h 5m", 72 * time.Hour: "in 3 days",
	} {
		assert.Equal(t, want, Until(now.Add(d), now), d.String())
	}
}

func TestSearchMatchesEveryWord(t *testing.T) {
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "checkout"},
		Spec:   promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "env/prod"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{Branch: "env/prod", Active: promoterv1alpha1.CommitState{DrySHA: "deadbeef00"}}}}}
	for q, want := range map[string]bool{"checkout": true, "team-a prod": true, "dead": true, "dea": false, "checkout billing": false, "": true} {
		assert.Equal(t, want, Matches(ps, q), q)
	}
}
