package rollbackpolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

var (
	t0    = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	rules = Rules{Threshold: time.Minute, Window: time.Hour, Cooldown: 2 * time.Hour}
)

const (
	good = "1111111111111111111111111111111111111111"
	bad  = "2222222222222222222222222222222222222222"
	fix  = "3333333333333333333333333333333333333333"
)

// prodOn is prod running dry, promoted at promoted, with good recorded healthy.
func prodOn(dry string, promoted time.Time) promoterv1alpha1.EnvironmentStatus {
	return promoterv1alpha1.EnvironmentStatus{
		Branch:             "prod",
		Active:             promoterv1alpha1.CommitState{DrySHA: dry, HydratedSHA: "h" + dry[1:]},
		History:            []promoterv1alpha1.PromotionRecord{{DrySHA: dry, Time: metav1.NewTime(promoted)}, {DrySHA: good, Time: metav1.NewTime(promoted.Add(-24 * time.Hour))}},
		LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: good, Time: metav1.NewTime(promoted.Add(-23 * time.Hour))}},
	}
}

func failingSince(env promoterv1alpha1.EnvironmentStatus, since time.Time) rollbackv1alpha1.PolicyEnvironmentStatus {
	return rollbackv1alpha1.PolicyEnvironmentStatus{Branch: "prod", Failing: &rollbackv1alpha1.ObservedFailure{
		DrySHA: env.Active.DrySHA, HydratedSHA: env.Active.HydratedSHA, Key: "health", Since: metav1.NewMicroTime(since)}}
}

var healthFails = &Failure{Key: "health", Description: "web: 0/3 ready"}

func TestDecideTimesTheFailureThenFires(t *testing.T) {
	env := prodOn(bad, t0)

	first := Decide(Observed{Env: env, Failure: healthFails, Policy: "p"}, rules, t0.Add(5*time.Minute))
	assert.Nil(t, first.Fire, "not before the threshold")
	assert.Equal(t, time.Minute, first.RequeueAfter, "woken when the threshold ends")
	assert.Equal(t, DecisionWaiting, first.Decision)
	assert.True(t, first.Status.Failing.Since.Equal(&metav1.MicroTime{Time: t0.Add(5 * time.Minute)}))

	later := Decide(Observed{Env: env, Failure: healthFails, Previous: first.Status, Policy: "p"}, rules, t0.Add(6*time.Minute))
	if assert.NotNil(t, later.Fire) {
		assert.Equal(t, bad, later.Fire.BadDrySHA)
		assert.Equal(t, "health failed in prod on dry 2222222: web: 0/3 ready", later.Fire.Reason)
		assert.True(t, later.Fire.Since.Equal(&first.Status.Failing.Since), "time to restore counts from the first failure seen")
	}
	assert.Equal(t, DecisionFired, later.Decision)
}

func TestDecideForgetsARecoveredCheck(t *testing.T) {
	env := prodOn(bad, t0)
	failing := failingSince(env, t0.Add(time.Minute))
	v := Decide(Observed{Env: env, Previous: failing, Policy: "p"}, rules, t0.Add(90*time.Second))
	assert.Nil(t, v.Fire)
	assert.Nil(t, v.Status.Failing)

	again := Decide(Observed{Env: env, Failure: healthFails, Previous: v.Status, Policy: "p"}, rules, t0.Add(3*time.Minute))
	assert.Nil(t, again.Fire, "a new failure is timed from its start")
}

func TestDecideHolds(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	merged := metav1.NewTime(t0.Add(2 * time.Minute))
	for _, tc := range []struct {
		name     string
		env      promoterv1alpha1.EnvironmentStatus
		reverts  []*rollbackv1alpha1.RevertCommit
		rules    Rules
		decision string
		message  string
	}{
		{
			name: "already reverted, by a person", env: prodOn(bad, t0),
			reverts:  []*rollbackv1alpha1.RevertCommit{revert("by-hand", "", bad, "", nil)},
			decision: DecisionAlreadyReverted, message: "already reverted by RevertCommit by-hand",
		},
		{
			name: "already reverted, the revert failed", env: prodOn(bad, t0),
			reverts:  []*rollbackv1alpha1.RevertCommit{revert("p-prod-2222222222", "p", bad, rollbackv1alpha1.RevertFailed, nil)},
			decision: DecisionAlreadyReverted, message: "never twice",
		},
		{
			name: "runs a revert", env: revertedTo(good, t0),
			reverts:  []*rollbackv1alpha1.RevertCommit{revert("p-prod-2222222222", "p", bad, rollbackv1alpha1.RevertMerged, &merged)},
			decision: DecisionRunsARevert, message: "a revert is never rolled back automatically",
		},
		{
			name: "outside the window", env: prodOn(bad, t0.Add(-2*time.Hour)),
			decision: DecisionOutsideWindow, message: "outside the window",
		},
		{
			name: "cooldown", env: prodOn(fix, t0),
			reverts:  []*rollbackv1alpha1.RevertCommit{revert("p-prod-2222222222", "p", bad, rollbackv1alpha1.RevertMerged, &merged)},
			decision: DecisionCooldown, message: "in cooldown after RevertCommit p-prod-2222222222",
		},
		{
			name: "no promotion recorded", env: withoutHistory(prodOn(bad, t0)),
			decision: DecisionNoPromotion, message: "left to people",
		},
		{
			name: "nothing healthy to go back to", env: withoutHealthy(prodOn(bad, t0)),
			decision: DecisionNoTarget, message: "no other healthy dry SHA",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rules
			if tc.rules != (Rules{}) {
				r = tc.rules
			}
			prev := failingSince(tc.env, t0.Add(time.Minute))
			v := Decide(Observed{Env: tc.env, Failure: healthFails, Previous: prev, Reverts: tc.reverts, Policy: "p"}, r, now)
			assert.Nil(t, v.Fire)
			assert.Equal(t, tc.decision, v.Decision)
			assert.True(t, strings.Contains(v.Status.Message, tc.message), v.Status.Message)
		})
	}
}

func TestDecideAfterTheCooldownFiresAgainForAnotherBadSHA(t *testing.T) {
	merged := metav1.NewTime(t0.Add(2 * time.Minute))
	reverts := []*rollbackv1alpha1.RevertCommit{revert("p-prod-2222222222", "p", bad, rollbackv1alpha1.RevertMerged, &merged)}
	env := prodOn(fix, t0.Add(3*time.Hour))
	now := t0.Add(3*time.Hour + 10*time.Minute)
	v := Decide(Observed{Env: env, Failure: healthFails, Previous: failingSince(env, now.Add(-5*time.Minute)), Reverts: reverts, Policy: "p"}, rules, now)
	if assert.NotNil(t, v.Fire) {
		assert.Equal(t, fix, v.Fire.BadDrySHA)
	}
	assert.Equal(t, "p-prod-2222222222", v.Status.LastRollback.RevertCommit, "the last rollback is read from the cluster")
}

func TestRevertCommitNamesAreStableAndValid(t *testing.T) {
	assert.Regexp(t, `^prod-prod-2222222222-[0-9a-f]{6}$`, RevertCommitName("prod", "prod", bad))
	long := RevertCommitName(strings.Repeat("policy", 20), "environments/EU_West", bad)
	assert.Equal(t, long, RevertCommitName(strings.Repeat("policy", 20), "environments/EU_West", bad))
	assert.LessOrEqual(t, len(long), 63)
	assert.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, long)
	assert.NotEqual(t, RevertCommitName("a", "b-c", bad), RevertCommitName("a-b", "c", bad), "no collision between split names")
}

func revert(name, policy, badDry string, phase rollbackv1alpha1.RevertPhase, merged *metav1.Time) *rollbackv1alpha1.RevertCommit {
	rc := &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(90 * time.Second))},
		Spec:       rollbackv1alpha1.RevertCommitSpec{ActiveBranch: "prod", BadDrySHA: badDry},
		Status:     rollbackv1alpha1.RevertCommitStatus{Phase: phase, BadDrySHA: badDry, TargetDrySHA: good, MergeTime: merged},
	}
	if policy != "" {
		rc.Labels = map[string]string{rollbackv1alpha1.PolicyLabel: policy}
	}
	return rc
}

// revertedTo is prod back on dry after a revert: its last promotion was of bad.
func revertedTo(dry string, promoted time.Time) promoterv1alpha1.EnvironmentStatus {
	env := prodOn(bad, promoted)
	env.Active = promoterv1alpha1.CommitState{DrySHA: dry, HydratedSHA: "r" + dry[1:]}
	return env
}

func withoutHistory(env promoterv1alpha1.EnvironmentStatus) promoterv1alpha1.EnvironmentStatus {
	env.History = nil
	return env
}

func withoutHealthy(env promoterv1alpha1.EnvironmentStatus) promoterv1alpha1.EnvironmentStatus {
	env.LastHealthyDrySHAs = nil
	return env
}

func TestRevertCommitsCarryThePolicysLabels(t *testing.T) {
	p := &rollbackv1alpha1.RollbackPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"shard": "a", rollbackv1alpha1.PolicyLabel: "spoofed"}}}
	got := revertCommitLabels(p)
	assert.Equal(t, map[string]string{"shard": "a", rollbackv1alpha1.PolicyLabel: "web"}, got, "the shard label is kept; the policy label names this policy")
	assert.Equal(t, "spoofed", p.Labels[rollbackv1alpha1.PolicyLabel], "the policy itself is not changed")
}

// Never twice is kept by the policy's own status: with every RevertCommit deleted (which lifts
// the promoter's hold), the bad dry SHA promoted again and failing again is not reverted again,
// and the cooldown still counts from the last rollback; the revert-again annotation naming the
// SHA allows one more, after the cooldown, under another RevertCommit name, and not a third.
func TestDecideKeepsNeverTwiceAndTheCooldownInStatus(t *testing.T) {
	reverted := rollbackv1alpha1.PolicyEnvironmentStatus{Branch: "prod", RevertedDrySHAs: []string{bad},
		LastRollback: &rollbackv1alpha1.PolicyRollback{RevertCommit: "p-prod-first", BadDrySHA: bad, Time: metav1.NewTime(t0)}}
	env := prodOn(bad, t0.Add(time.Hour))
	previous := reverted
	previous.Failing = failingSince(env, t0.Add(time.Hour)).Failing

	inCooldown := Decide(Observed{Env: env, Failure: healthFails, Previous: previous, Policy: "p", RevertAgain: bad}, rules, t0.Add(time.Hour+5*time.Minute))
	assert.Nil(t, inCooldown.Fire)
	assert.Equal(t, DecisionCooldown, inCooldown.Decision, "the cooldown counts from status, not from a RevertCommit that is gone")

	after := t0.Add(3 * time.Hour)
	env = prodOn(bad, after.Add(-10*time.Minute))
	previous.Failing = failingSince(env, after.Add(-5*time.Minute)).Failing
	never := Decide(Observed{Env: env, Failure: healthFails, Previous: previous, Policy: "p"}, rules, after)
	assert.Nil(t, never.Fire)
	assert.Equal(t, DecisionAlreadyReverted, never.Decision)
	assert.Contains(t, never.Status.Message, rollbackv1alpha1.RevertAgainAnnotation+"="+bad, "says how to allow it")
	assert.Equal(t, []string{bad}, never.Status.RevertedDrySHAs, "kept")

	again := Decide(Observed{Env: env, Failure: healthFails, Previous: previous, Policy: "p", RevertAgain: bad}, rules, after)
	if assert.NotNil(t, again.Fire, "the annotation names the SHA: once more") {
		assert.True(t, again.Fire.Again)
	}
	second := &rollbackv1alpha1.RevertCommit{ObjectMeta: metav1.ObjectMeta{Name: RevertCommitName(againPolicy("p"), "prod", bad),
		Labels: map[string]string{rollbackv1alpha1.PolicyLabel: "p"}, CreationTimestamp: metav1.NewTime(t0)}, Spec: rollbackv1alpha1.RevertCommitSpec{BadDrySHA: bad}}
	third := Decide(Observed{Env: env, Failure: healthFails, Previous: previous, Policy: "p", RevertAgain: bad, Reverts: []*rollbackv1alpha1.RevertCommit{second}}, rules, after)
	assert.Nil(t, third.Fire, "not a third time")
	assert.Equal(t, DecisionAlreadyReverted, third.Decision)
}

// A RevertCommit the policy created but whose status write was lost (a crash) is recorded in
// status.revertedDrySHAs on the next decision, so deleting it later resets nothing.
func TestDecideRecordsARevertItsStatusMissed(t *testing.T) {
	env := prodOn(fix, t0)
	made := &rollbackv1alpha1.RevertCommit{ObjectMeta: metav1.ObjectMeta{Name: "p-prod-x", Labels: map[string]string{rollbackv1alpha1.PolicyLabel: "p"},
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}, Spec: rollbackv1alpha1.RevertCommitSpec{BadDrySHA: bad}}
	v := Decide(Observed{Env: env, Policy: "p", Reverts: []*rollbackv1alpha1.RevertCommit{made}}, rules, t0)
	assert.Equal(t, []string{bad}, v.Status.RevertedDrySHAs)
	if assert.NotNil(t, v.Status.LastRollback) {
		assert.Equal(t, "p-prod-x", v.Status.LastRollback.RevertCommit)
	}
}

// The target skips healthy dry SHAs that were themselves reverted.
func TestDecideTargetSkipsRevertedDrySHAs(t *testing.T) {
	env := prodOn(fix, t0)
	env.LastHealthyDrySHAs = append([]promoterv1alpha1.HealthyDrySHA{{SHA: bad, Time: metav1.NewTime(t0.Add(-time.Hour))}}, env.LastHealthyDrySHAs...)
	previous := failingSince(env, t0)
	previous.RevertedDrySHAs = []string{bad}
	v := Decide(Observed{Env: env, Failure: healthFails, Previous: previous, Policy: "p"}, rules, t0.Add(2*time.Minute))
	if assert.NotNil(t, v.Fire) {
		assert.Equal(t, good, v.Fire.TargetDrySHA, "bad was reverted once: not a target, though it was healthy for a while")
	}
	previous.RevertedDrySHAs = []string{bad, good}
	none := Decide(Observed{Env: env, Failure: healthFails, Previous: previous, Policy: "p"}, rules, t0.Add(2*time.Minute))
	assert.Equal(t, DecisionNoTarget, none.Decision)
}
