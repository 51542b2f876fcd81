package manifestrelease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
)

func TestKeepHeldAcrossSuspend(t *testing.T) {
	for _, tc := range []struct {
		name       string
		st         rollbackv1.ManifestReleaseStatus
		suspending bool
		want       int64
	}{
		{"a failed version stays held when the release is suspended", rollbackv1.ManifestReleaseStatus{LastAttemptFailed: true, LastAttemptedGeneration: 3, ObservedGeneration: 3}, true, 4},
		{"not while running", rollbackv1.ManifestReleaseStatus{LastAttemptFailed: true, LastAttemptedGeneration: 3, ObservedGeneration: 3}, false, 3},
		{"a version that did not fail is not held", rollbackv1.ManifestReleaseStatus{LastAttemptedGeneration: 3, ObservedGeneration: 3}, true, 3},
		{"a spec change seen before the suspend still retries", rollbackv1.ManifestReleaseStatus{LastAttemptFailed: true, LastAttemptedGeneration: 2, ObservedGeneration: 3}, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			keepHeldAcrossSuspend(&st, 4, tc.suspending)
			assert.Equal(t, tc.want, st.LastAttemptedGeneration)
		})
	}
}

func TestRetryDelayGrowsWithHowLongTheRefusalLasted(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stalled := func(reason string, since time.Duration) *rollbackv1.ManifestRelease {
		mr := &rollbackv1.ManifestRelease{Spec: rollbackv1.ManifestReleaseSpec{Interval: &metav1.Duration{Duration: 5 * time.Minute}}}
		mr.Status.Conditions = []metav1.Condition{{Type: conditions.Stalled, Status: metav1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.NewTime(now.Add(-since))}}
		return mr
	}
	assert.Equal(t, minRetryDelay, retryDelay(&rollbackv1.ManifestRelease{}, ReasonForbidden, now), "first refusal")
	assert.Equal(t, minRetryDelay, retryDelay(stalled(ReasonNotOwned, time.Hour), ReasonForbidden, now), "another reason starts over")
	assert.Equal(t, minRetryDelay, retryDelay(stalled(ReasonForbidden, time.Second), ReasonForbidden, now))
	assert.Equal(t, 40*time.Second, retryDelay(stalled(ReasonForbidden, 40*time.Second), ReasonForbidden, now))
	assert.Equal(t, 5*time.Minute, retryDelay(stalled(ReasonForbidden, time.Hour), ReasonForbidden, now), "at most spec.interval")
}

// The progress the next step starts from: what the steps before found, with what this step's
// act found laid over it, and the release as this step stored it.
func TestProgressAfterAStep(t *testing.T) {
	stored := &rollbackv1.ManifestRelease{ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: "8"}}
	applied1 := &applied{At: decideNow}
	for _, tc := range []struct {
		name   string
		before progress
		s      step
		found  findings
		want   progress
	}{
		{"the step that records the operation counts, and marks it operating",
			progress{Steps: 1, Found: findings{Saved: &saved{}}}, step{Operating: true}, findings{Applied: applied1},
			progress{Left: stored, Steps: 2, Found: findings{Operating: true, Saved: &saved{}, Applied: applied1}}},
		{"a look at health that must look again is not counted, and its finding replaces the apply's",
			progress{Steps: 3, Found: findings{Operating: true, Applied: applied1}}, step{}, findings{Awaiting: true, Applied: &applied{At: decideNow}},
			progress{Left: stored, Steps: 3, Found: findings{Operating: true, Awaiting: true, Applied: &applied{At: decideNow}}}},
		{"a step after a look at health is no longer awaiting",
			progress{Steps: 3, Found: findings{Operating: true, Awaiting: true, Applied: applied1}}, step{}, findings{Tested: &tested{Result: rollbackv1.TestPassed}},
			progress{Left: stored, Steps: 4, Found: findings{Operating: true, Applied: applied1, Tested: &tested{Result: rollbackv1.TestPassed}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.before.after(tc.s, result{Release: stored, Found: tc.found}))
		})
	}
}
