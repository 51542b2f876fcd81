package pullrequest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/conditions"
)

// A merge the SCM refuses is asked again within 500 ms at first, then less and less often, up
// to once a minute: Gitea refuses a pull request with a conflict for ever, as "try again later".
func TestNotMergeableRetryAfterBacksOff(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	refusedFor := func(reason string, d time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: conditions.Reconciling, Status: metav1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.NewTime(now.Add(-d))}}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  time.Duration
	}{
		{"first refusal", nil, 500 * time.Millisecond},
		{"refused for a second", refusedFor(ReasonNotMergeableYet, time.Second), 500 * time.Millisecond},
		{"refused for 20 s", refusedFor(ReasonNotMergeableYet, 20*time.Second), 5 * time.Second},
		{"refused for an hour", refusedFor(ReasonNotMergeableYet, time.Hour), time.Minute},
		{"reconciling for another reason", refusedFor("Other", time.Hour), 500 * time.Millisecond},
	} {
		assert.Equal(t, tc.want, notMergeableRetryAfter(tc.conds, now), tc.name)
	}
}
