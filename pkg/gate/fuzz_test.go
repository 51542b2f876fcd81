package gate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// FuzzWindow feeds arbitrary schedule, zone and duration strings through validation and
// evaluation: nothing may panic, invalid input must fail closed, and for valid windows the
// computed next change must be a real change with the state held until just before it.
func FuzzWindow(f *testing.F) {
	seeds := []struct{ schedule, zone, duration string }{
		{"0 18 * * FRI", "Europe/London", "62h"},
		{"30 2 * * *", "America/New_York", "1h"},
		{"*/7 */3 1-15 */2 1,3,5", "Australia/Lord_Howe", "45m"},
		{"0 0 29 2 *", "Pacific/Apia", "24h"},
		{"@daily", "Asia/Kathmandu", "8784h"},
		{"* * * * *", "Antarctica/Troll", "1m"},
		{"0 0 * * *", "UTC", "0s"},
		{"TZ=UTC", "UTC", "1h"},
		{"@every 1h", "", "1h"},
		{"0 0 31 2 *", "Local", "-1h"},
		{"1-2/0 * * * *", "Etc/GMT+12", "1ns"},
	}
	for i, s := range seeds {
		f.Add(s.schedule, s.zone, s.duration, int64(1_750_000_000+i*86_400_000), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, schedule, zone, duration string, unix int64, closes bool) {
		d, err := time.ParseDuration(duration)
		if err != nil {
			d = 0
		}
		kind := gatingv1alpha1.StateOpen
		if closes {
			kind = gatingv1alpha1.StateClosed
		}
		spec := gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{{
			Schedule: schedule, TimeZone: zone, Duration: metav1.Duration{Duration: d}, Kind: kind,
		}}}
		// Between 1970 and 2200, where time zone data is meaningful.
		const span = int64(230 * 365 * 24 * 3600)
		now := time.Unix(((unix%span)+span)%span, 0).UTC()

		invalid := ValidateSpec(spec)
		decision := Evaluate(spec, now)
		if invalid != nil {
			require.False(t, decision.Open)
			require.Equal(t, gatingv1alpha1.ReasonInvalid, decision.Reason)
			return
		}
		if decision.NextTransition != nil {
			require.True(t, decision.NextTransition.After(now))
		}

		w, errs := compileWindow(0, spec.Windows[0], nil)
		require.Empty(t, errs)
		active := w.activeAt(now)
		next, ok := w.nextChange(now, active)
		if !ok {
			return
		}
		require.True(t, next.After(now), "next change %s after %s", next, now)
		require.NotEqual(t, active, w.activeAt(next), "activity must flip at %s", next)
		require.Equal(t, active, w.activeAt(next.Add(-time.Nanosecond)), "activity must hold until %s", next)
	})
}
