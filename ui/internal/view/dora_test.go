package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestComputeDORA(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	day := 24 * time.Hour
	for _, tc := range []struct {
		name string
		in   DORAInput
		want DORA
	}{
		{name: "nothing deployed has no figures", in: DORAInput{Now: now}, want: DORA{}},
		{
			name: "frequency counts from the oldest kept record to now",
			in: DORAInput{Now: now, Deployments: []Deployment{
				{DrySHA: "c", Time: ago(1 * day)}, {DrySHA: "b", Time: ago(2 * day)}, {DrySHA: "a", Time: ago(4 * day)},
			}},
			want: DORA{Deployments: 3, Since: ago(4 * day), PerDay: 0.75},
		},
		{
			name: "lead time is the median over the commits whose time is known",
			in: DORAInput{Now: now,
				Deployments: []Deployment{{DrySHA: "a", Time: ago(10 * time.Hour)}, {DrySHA: "b", Time: ago(8 * time.Hour)},
					{DrySHA: "c", Time: ago(2 * time.Hour)}, {DrySHA: "unknown", Time: ago(time.Hour)}},
				CommitTimes: map[string]time.Time{"a": ago(11 * time.Hour), "b": ago(11 * time.Hour), "c": ago(7 * time.Hour)}},
			want: DORA{Deployments: 4, Since: ago(10 * time.Hour), PerDay: 4.0 / 10 * 24,
				LeadTime: 3 * time.Hour, LeadTimeSamples: 3},
		},
		{
			name: "a commit time after the promotion (clock skew) is no sample",
			in: DORAInput{Now: now, Deployments: []Deployment{{DrySHA: "a", Time: ago(day)}},
				CommitTimes: map[string]time.Time{"a": ago(time.Hour)}},
			want: DORA{Deployments: 1, Since: ago(day), PerDay: 1},
		},
		{
			name: "a deployment a RevertCommit names as bad failed, whatever the revert's phase",
			in: DORAInput{Now: now,
				Deployments: []Deployment{{DrySHA: "a", Time: ago(4 * day)}, {DrySHA: "b", Time: ago(3 * day)},
					{DrySHA: "c", Time: ago(2 * day)}, {DrySHA: "d", Time: ago(day)}},
				Remediations: []Remediation{{BadDrySHA: "b"}, {BadDrySHA: "d"}, {BadDrySHA: "never-deployed-here"}}},
			want: DORA{Deployments: 4, Since: ago(4 * day), PerDay: 1, Failed: 2, FailureRate: 0.5},
		},
		{
			name: "time to restore runs from the policy's first failure to the merge",
			in: DORAInput{Now: now,
				Deployments:  []Deployment{{DrySHA: "b", Time: ago(2 * day)}},
				Remediations: []Remediation{{BadDrySHA: "b", FailingSince: ago(10 * time.Hour), Restored: ago(9 * time.Hour)}}},
			want: DORA{Deployments: 1, Since: ago(2 * day), PerDay: 0.5, Failed: 1, FailureRate: 1,
				TimeToRestore: time.Hour, RestoreSamples: 1},
		},
		{
			name: "a person's revert runs from when the bad commit last reached the environment before it",
			in: DORAInput{Now: now,
				Deployments: []Deployment{{DrySHA: "b", Time: ago(5 * time.Hour)}, {DrySHA: "b", Time: ago(30 * time.Hour)},
					{DrySHA: "a", Time: ago(40 * time.Hour)}},
				Remediations: []Remediation{
					{BadDrySHA: "b", Restored: ago(28 * time.Hour)}, // the first time b ran: restored in 2h
					{BadDrySHA: "b", Restored: ago(time.Hour)},      // the second time: 4h
				}},
			want: DORA{Deployments: 3, Since: ago(40 * time.Hour), PerDay: 3.0 / 40 * 24, Failed: 2, FailureRate: 2.0 / 3,
				TimeToRestore: 3 * time.Hour, RestoreSamples: 2},
		},
		{
			name: "a revert not merged yet, or whose start no status holds, is no sample",
			in: DORAInput{Now: now,
				Deployments: []Deployment{{DrySHA: "b", Time: ago(day)}},
				Remediations: []Remediation{{BadDrySHA: "b", FailingSince: ago(2 * time.Hour)},
					{BadDrySHA: "gone-from-history", Restored: ago(time.Hour)}}},
			want: DORA{Deployments: 1, Since: ago(day), PerDay: 1, Failed: 1, FailureRate: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ComputeDORA(tc.in)
			assert.InDelta(t, tc.want.PerDay, got.PerDay, 1e-9, "per day")
			assert.InDelta(t, tc.want.FailureRate, got.FailureRate, 1e-9, "failure rate")
			got.PerDay, got.FailureRate, tc.want.PerDay, tc.want.FailureRate = 0, 0, 0, 0
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMedian(t *testing.T) {
	assert.Zero(t, median(nil))
	assert.Equal(t, 2*time.Second, median([]time.Duration{3 * time.Second, time.Second, 2 * time.Second}))
	assert.Equal(t, 2500*time.Millisecond, median([]time.Duration{4 * time.Second, time.Second, 2 * time.Second, 3 * time.Second}))
}
