package revertcommit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
)

func TestNamesAreDerivedAndBounded(t *testing.T) {
	assert.Equal(t, "prod-revert-web", RevertBranch("prod", "web"))
	assert.Equal(t, "revert-app-prod", PullRequestName("app", "prod"), "one name per environment: its claim")
	assert.NotEqual(t, PullRequestName("app", "Prod_eu"), PullRequestName("app", "prod-eu"), "branches that fit an object name only once changed keep a hash")
	assert.Regexp(t, `^[a-z0-9.-]+$`, PullRequestName("app", "env/Prod_eu"))
	long := RevertBranch(strings.Repeat("e", 200), strings.Repeat("n", 253))
	assert.Len(t, long, maxBranch)
	assert.Equal(t, long, RevertBranch(strings.Repeat("e", 200), strings.Repeat("n", 253)), "the same inputs, the same branch")
	assert.NotEqual(t, long, RevertBranch(strings.Repeat("e", 200), strings.Repeat("n", 252)+"m"), "a cut name keeps a hash of the whole")
	assert.LessOrEqual(t, len(PullRequestName(strings.Repeat("n", 253), "prod")), 253)
}

func TestMessageCarriesTheTrailersAndCannotForgeTheMarker(t *testing.T) {
	rc := &rollbackv1alpha1.RevertCommit{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "u-1"}}
	rc.Spec.Reason = "INC-1\nSluice-Revert-Commit-Uid: u-2"
	msg := commitMessage(rc, "prod", shas{bad: "b", target: "t"}, "h")
	assert.Equal(t, "b", git.Trailer(msg, rollbackv1alpha1.TrailerRevertedDrySHA))
	assert.Equal(t, "t", git.Trailer(msg, rollbackv1alpha1.TrailerRestoredDrySHA))
	assert.Equal(t, "apps/web", git.Trailer(msg, rollbackv1alpha1.TrailerRevertCommit))
	assert.Equal(t, "u-1", git.Trailer(msg, rollbackv1alpha1.TrailerRevertCommitUID))
	assert.NotContains(t, msg, "\n"+marker("u-2")+"\n", "a reason is one line: it cannot pose as another revert's marker")
	assert.True(t, strings.HasPrefix(msg, "Revert prod to dry t\n\n"))
}

func TestDefaultTargetIsTheNewestHealthyThatIsNotBad(t *testing.T) {
	ps := &promoterv1alpha1.PromotionStrategy{Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{
		{Branch: "staging", LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: "s1"}}},
		{Branch: "prod", LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: "bad"}, {SHA: "p2"}, {SHA: "p1"}}},
	}}}
	assert.Equal(t, "p2", lastHealthy(ps, "prod", "bad", nil))
	assert.Equal(t, "bad", lastHealthy(ps, "prod", "other", nil))
	assert.Equal(t, "p1", lastHealthy(ps, "prod", "other", []string{"bad", "p2"}), "a dry SHA reverted before is no target")
	assert.Empty(t, lastHealthy(ps, "qa", "bad", nil))
	assert.Equal(t, ", such as one recorded healthy: bad, p2, p1", healthyHint(ps, "prod"))
}

func TestAutoMergeFollowsTheEnvironmentUnlessSet(t *testing.T) {
	yes, no := true, false
	rc := &rollbackv1alpha1.RevertCommit{}
	assert.True(t, autoMerge(rc, promoterv1alpha1.Environment{}))
	assert.False(t, autoMerge(rc, promoterv1alpha1.Environment{AutoMerge: &no}), "waits wherever a promotion would")
	rc.Spec.AutoMerge = &yes
	assert.True(t, autoMerge(rc, promoterv1alpha1.Environment{AutoMerge: &no}))
}
