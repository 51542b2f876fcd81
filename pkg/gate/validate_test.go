package gate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

func TestValidateSpecAccepts(t *testing.T) {
	specs := map[string]gatingv1alpha1.GateSpec{
		"empty":                    {},
		"RFC change freeze":        {Closed: true, Message: "change freeze"},
		"descriptor and no zone":   {Windows: []gatingv1alpha1.GateWindow{windowSpec("@weekly", "", time.Hour, gatingv1alpha1.StateOpen)}},
		"names and ranges":         {Windows: []gatingv1alpha1.GateWindow{windowSpec("*/15 9-17 * JAN-MAR MON-FRI", "Asia/Kolkata", time.Hour, gatingv1alpha1.StateOpen)}},
		"longer than its period":   {Windows: []gatingv1alpha1.GateWindow{windowSpec("0 9 * * *", london, 30*time.Hour, gatingv1alpha1.StateClosed)}},
		"leap day":                 {Windows: []gatingv1alpha1.GateWindow{windowSpec("0 0 29 2 *", london, 24*time.Hour, gatingv1alpha1.StateClosed)}},
		"31st or any Monday":       {Windows: []gatingv1alpha1.GateWindow{windowSpec("0 0 31 4 MON", london, time.Hour, gatingv1alpha1.StateClosed)}},
		"longest duration allowed": {Windows: []gatingv1alpha1.GateWindow{windowSpec("@yearly", london, MaxWindowDuration, gatingv1alpha1.StateClosed)}},
		"override":                 {Override: override(gatingv1alpha1.StateClosed, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), "")},
	}
	for name, spec := range specs {
		assert.NoError(t, ValidateSpec(spec), name)
	}
}

func TestValidateSpecExplains(t *testing.T) {
	cases := []struct {
		name   string
		window gatingv1alpha1.GateWindow
		errHas []string
	}{
		{"four fields", windowSpec("0 18 * FRI", london, time.Hour, "open"), []string{"spec.windows[0].schedule", "expected exactly 5 fields", "minute (0-59)"}},
		{"Sunday as 7", windowSpec("0 0 * * 7", london, time.Hour, "open"), []string{"above maximum (6)", "Sunday is 0"}},
		{"seconds field", windowSpec("0 0 18 * * FRI", london, time.Hour, "open"), []string{"expected exactly 5 fields"}},
		{"zone in the schedule", windowSpec("CRON_TZ=Europe/London 0 18 * * FRI", london, time.Hour, "open"), []string{"put the zone in timeZone"}},
		{"zone prefix without a schedule", windowSpec("TZ=UTC", london, time.Hour, "open"), []string{"timeZone"}},
		{"@every", windowSpec("@every 1h", london, time.Hour, "open"), []string{"not a calendar schedule"}},
		{"30 February", windowSpec("0 0 30 2 *", london, time.Hour, "open"), []string{"never matches a real date"}},
		{"empty schedule", windowSpec(" ", london, time.Hour, "open"), []string{"schedule is empty"}},
		{"unknown zone", windowSpec("0 0 * * *", "Europe/Londres", time.Hour, "open"), []string{"spec.windows[0].timeZone", "Europe/Londres", "IANA"}},
		{"machine zone", windowSpec("0 0 * * *", "Local", time.Hour, "open"), []string{"depends on the machine"}},
		{"zero duration", windowSpec("0 0 * * *", london, 0, "open"), []string{"spec.windows[0].duration", "must be positive"}},
		{"negative duration", windowSpec("0 0 * * *", london, -time.Hour, "open"), []string{"must be positive"}},
		{"too long", windowSpec("0 0 * * *", london, MaxWindowDuration+time.Minute, "open"), []string{"at most 8784h"}},
		{"unknown kind", windowSpec("0 0 * * *", london, time.Hour, "freeze"), []string{"spec.windows[0].kind", `"open"`, `"closed"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateSpec(gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{tc.window}})
			require.Error(t, err)
			for _, part := range tc.errHas {
				assert.Contains(t, err.Error(), part)
			}
		})
	}

	err := ValidateSpec(gatingv1alpha1.GateSpec{Override: &gatingv1alpha1.GateOverride{State: "opened"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.override.state")
	assert.Contains(t, err.Error(), "spec.override.until")

	err = ValidateSpec(gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{
		windowSpec("0 0 * * *", london, time.Hour, "open"),
		windowSpec("bad", "Nowhere/Town", 0, "open"),
	}})
	require.Error(t, err)
	for _, field := range []string{"spec.windows[1].schedule", "spec.windows[1].timeZone", "spec.windows[1].duration"} {
		assert.Contains(t, err.Error(), field, "every problem is reported at once")
	}
	assert.NotContains(t, err.Error(), "spec.windows[0]")
}
