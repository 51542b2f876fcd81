package gate

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

func windowSpec(schedule, zone string, d time.Duration, kind gatingv1alpha1.GateState) gatingv1alpha1.GateWindow {
	return gatingv1alpha1.GateWindow{Schedule: schedule, TimeZone: zone, Duration: metav1.Duration{Duration: d}, Kind: kind}
}

func mustWindow(t testing.TB, schedule, zone string, d time.Duration) *window {
	t.Helper()
	w, errs := compileWindow(0, windowSpec(schedule, zone, d, gatingv1alpha1.StateClosed), nil)
	require.Empty(t, errs)
	return w
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return ts
}

// transitions lists the instants at which w opens and closes after from, n of them.
func transitions(t *testing.T, w *window, from time.Time, n int) []string {
	t.Helper()
	var out []string
	active := w.activeAt(from)
	for range n {
		next, ok := w.nextChange(from, active)
		if !ok {
			break
		}
		active = !active
		require.Equal(t, active, w.activeAt(next), "activity must flip at %s", next)
		require.Equal(t, !active, w.activeAt(next.Add(-time.Nanosecond)), "activity must hold until %s", next)
		out = append(out, next.In(w.loc).Format(time.RFC3339))
		from = next
	}
	return out
}

// Daylight-saving dates used below:
// America/New_York 2025: Mar 9 02:00 EST -> 03:00 EDT; Nov 2 02:00 EDT -> 01:00 EST.
// Europe/London 2025: Mar 30 01:00 GMT -> 02:00 BST; Oct 26 02:00 BST -> 01:00 GMT.
func TestWindowAcrossDaylightSaving(t *testing.T) {
	cases := []struct {
		name     string
		schedule string
		zone     string
		duration time.Duration
		from     string
		want     []string // opens, closes, opens, closes...
	}{
		{
			name:     "New York spring forward: a 02:30 start the clock skips opens at the jump",
			schedule: "30 2 * * *", zone: "America/New_York", duration: time.Hour, from: "2025-03-08T12:00:00Z",
			want: []string{"2025-03-09T03:00:00-04:00", "2025-03-09T03:30:00-04:00", "2025-03-10T02:30:00-04:00", "2025-03-10T03:30:00-04:00"},
		},
		{
			name:     "New York fall back: a 01:30 start opens once, at the first 01:30, and closes when the clock first shows 02:30",
			schedule: "30 1 * * *", zone: "America/New_York", duration: time.Hour, from: "2025-11-01T12:00:00Z",
			want: []string{"2025-11-02T01:30:00-04:00", "2025-11-02T02:30:00-05:00", "2025-11-03T01:30:00-05:00", "2025-11-03T02:30:00-05:00"},
		},
		{
			name:     "London spring forward: a 01:30 start the clock skips opens at the jump",
			schedule: "30 1 * * *", zone: "Europe/London", duration: time.Hour, from: "2025-03-29T12:00:00Z",
			want: []string{"2025-03-30T02:00:00+01:00", "2025-03-30T02:30:00+01:00", "2025-03-31T01:30:00+01:00", "2025-03-31T02:30:00+01:00"},
		},
		{
			name:     "London fall back: a 01:30 start opens once and stays open through the repeated hour",
			schedule: "30 1 * * *", zone: "Europe/London", duration: time.Hour, from: "2025-10-25T12:00:00Z",
			want: []string{"2025-10-26T01:30:00+01:00", "2025-10-26T02:30:00Z", "2025-10-27T01:30:00Z", "2025-10-27T02:30:00Z"},
		},
		{
			name:     "New York spring forward: a window wholly inside the skipped hour does not open that day",
			schedule: "15 2 * * *", zone: "America/New_York", duration: 30 * time.Minute, from: "2025-03-08T12:00:00Z",
			want: []string{"2025-03-10T02:15:00-04:00", "2025-03-10T02:45:00-04:00"},
		},
		{
			name:     "London weekend freeze across fall back ends Monday 08:00 local",
			schedule: "0 18 * * FRI", zone: "Europe/London", duration: 62 * time.Hour, from: "2025-10-22T12:00:00Z",
			want: []string{"2025-10-24T18:00:00+01:00", "2025-10-27T08:00:00Z", "2025-10-31T18:00:00Z", "2025-11-03T08:00:00Z"},
		},
		{
			name:     "New York weekend freeze across spring forward ends Monday 08:00 local",
			schedule: "0 18 * * FRI", zone: "America/New_York", duration: 62 * time.Hour, from: "2025-03-05T12:00:00Z",
			want: []string{"2025-03-07T18:00:00-05:00", "2025-03-10T08:00:00-04:00", "2025-03-14T18:00:00-04:00", "2025-03-17T08:00:00-04:00"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := mustWindow(t, tc.schedule, tc.zone, tc.duration)
			assert.Equal(t, tc.want, transitions(t, w, mustTime(t, tc.from), len(tc.want)))
		})
	}
}

func TestWindowThatNeverCloses(t *testing.T) {
	for _, zone := range []string{"Europe/London", "America/New_York"} {
		// Daily from midnight for a local day: both changes of the year pass without a gap.
		w := mustWindow(t, "0 0 * * *", zone, 24*time.Hour)
		from := mustTime(t, "2025-01-01T12:00:00Z")
		require.True(t, w.activeAt(from))
		_, ok := w.nextChange(from, true)
		assert.False(t, ok, "%s: the window never closes", zone)
		for at := from; at.Before(from.AddDate(1, 0, 0)); at = at.Add(17 * time.Minute) {
			require.True(t, w.activeAt(at), "%s: active at %s", zone, at)
		}
	}
}

// referenceActivity decides activity by brute force, independently of the package: starts come from
// the cron library walking wall times in UTC (where it is exact), and each wall time becomes the
// first minute at which the zone's clock shows it or later, found by scanning minutes.
func referenceActivity(t *testing.T, schedule string, loc *time.Location, d time.Duration, from, to time.Time) func(time.Time) bool {
	t.Helper()
	sched, err := cron.ParseStandard("CRON_TZ=UTC " + schedule)
	require.NoError(t, err)
	reading := func(i time.Time) time.Time {
		l := i.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
	}
	first := func(w time.Time) time.Time {
		for i := w.Add(-16 * time.Hour); ; i = i.Add(time.Minute) {
			if !reading(i).Before(w) {
				return i
			}
		}
	}
	type span struct{ from, to time.Time }
	var spans []span
	for w := sched.Next(reading(from).Add(-d - 48*time.Hour)); w.Before(reading(to).Add(48 * time.Hour)); w = sched.Next(w) {
		spans = append(spans, span{first(w), first(w.Add(d))})
	}
	return func(at time.Time) bool {
		for _, s := range spans {
			if !at.Before(s.from) && at.Before(s.to) {
				return true
			}
		}
		return false
	}
}

func TestWindowMatchesBruteForceAcrossDaylightSaving(t *testing.T) {
	schedules := []struct {
		schedule string
		duration time.Duration
	}{
		{"30 2 * * *", time.Hour},
		{"30 1 * * *", time.Hour},
		{"0 * * * *", 30 * time.Minute},
		{"*/20 0-3 * * *", 15 * time.Minute},
		{"0 1 * * SUN", 90 * time.Minute},
		{"45 0 * * *", 3 * time.Hour},
		{"15 1,2 * * *", 50 * time.Minute},
		{"0 0 * * *", 25 * time.Hour},
		{"50 0 * * *", 70 * time.Minute},
		{"*/30 * * * *", 29 * time.Minute},
		{"0 1 * * *", 23 * time.Hour},
	}
	changes := []struct{ zone, around string }{
		{"America/New_York", "2025-03-09T07:00:00Z"},
		{"America/New_York", "2025-11-02T06:00:00Z"},
		{"Europe/London", "2025-03-30T01:00:00Z"},
		{"Europe/London", "2025-10-26T01:00:00Z"},
	}
	for _, c := range changes {
		for _, s := range schedules {
			w := mustWindow(t, s.schedule, c.zone, s.duration)
			from := mustTime(t, c.around).Add(-36 * time.Hour)
			to := from.Add(72 * time.Hour)
			ref := referenceActivity(t, s.schedule, w.loc, s.duration, from, to)

			var grid []time.Time
			for at := from; !at.After(to); at = at.Add(time.Minute) {
				grid = append(grid, at)
			}
			want := make([]bool, len(grid))
			for i, at := range grid {
				want[i] = ref(at)
			}
			nextDiff := make([]int, len(grid)) // index of the next minute whose activity differs, or -1
			nextDiff[len(grid)-1] = -1
			for i := len(grid) - 2; i >= 0; i-- {
				if want[i+1] != want[i] {
					nextDiff[i] = i + 1
				} else {
					nextDiff[i] = nextDiff[i+1]
				}
			}
			for i, at := range grid {
				got := w.activeAt(at)
				require.Equal(t, want[i], got, "%s %s %s: active at %s", c.zone, s.schedule, s.duration, at.In(w.loc))
				next, ok := w.nextChange(at, got)
				if nextDiff[i] >= 0 {
					require.True(t, ok, "%s %s: a change follows %s", c.zone, s.schedule, at.In(w.loc))
					require.Equal(t, grid[nextDiff[i]], next, "%s %s %s: next change after %s", c.zone, s.schedule, s.duration, at.In(w.loc))
				} else if ok {
					require.True(t, next.After(to), "%s %s: change at %s is not in the reference", c.zone, s.schedule, next)
				}
			}
		}
	}
}

func TestScheduleStartsMatchCronInUTC(t *testing.T) {
	// On wall times there is no daylight saving, so the cron library itself is the reference.
	for _, expr := range []string{"0 18 * * FRI", "*/15 9-17 * * 1-5", "0 0 29 2 *", "30 4 1,15 * 5", "0 12 */3 JAN,JUL *", "@weekly", "0 0 31 * *"} {
		s, err := parseSchedule(expr)
		require.NoError(t, err, expr)
		ref, err := cron.ParseStandard("CRON_TZ=UTC " + expr)
		require.NoError(t, err, expr)
		at := mustTime(t, "2023-12-30T23:59:00Z")
		// The library gives up after five years without a match, so stop before 2100 skips a leap day.
		for range 300 {
			if at.Year() >= 2090 {
				break
			}
			want := ref.Next(at)
			got, ok := s.nextStart(at, at.AddDate(9, 0, 0))
			require.True(t, ok, "%s after %s", expr, at)
			require.Equal(t, want, got, "%s after %s", expr, at)
			back, _, ok := s.latestStart(got.Add(time.Minute-time.Nanosecond), at)
			require.True(t, ok)
			require.Equal(t, got, back, "%s: latest start at or before %s", expr, got)
			at = got
		}
	}
}

func TestLeapDayScheduleAcrossTheSkipped2100(t *testing.T) {
	s, err := parseSchedule("0 0 29 2 *")
	require.NoError(t, err)
	from := mustTime(t, "2096-03-01T00:00:00Z")
	got, ok := s.nextStart(from, from.Add(horizon))
	require.True(t, ok, "2100 is not a leap year, so the next 29 February is in 2104")
	assert.Equal(t, mustTime(t, "2104-02-29T00:00:00Z"), got)
}
