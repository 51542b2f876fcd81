package gate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

const (
	london  = "Europe/London"
	newYork = "America/New_York"
)

func described(w gatingv1alpha1.GateWindow, description string) gatingv1alpha1.GateWindow {
	w.Description = description
	return w
}

// In June 2025 London is on BST (+01:00). The freeze runs Fri 13 Jun 18:00 to Mon 16 Jun 08:00.
var (
	noDeployFriday = described(windowSpec("0 18 * * FRI", london, 62*time.Hour, gatingv1alpha1.StateClosed), "No Deploy Friday")
	businessHours  = described(windowSpec("0 9 * * 1-5", london, 8*time.Hour, gatingv1alpha1.StateOpen), "business hours")
)

func override(state gatingv1alpha1.GateState, until time.Time, message string) *gatingv1alpha1.GateOverride {
	return &gatingv1alpha1.GateOverride{State: state, Until: metav1.NewTime(until), Message: message}
}

func at(t *testing.T, s string) time.Time { return mustTime(t, s) }

// evaluateCase is a gate's spec at a moment, and the decision Evaluate must make.
type evaluateCase struct {
	name       string
	spec       gatingv1alpha1.GateSpec
	now        time.Time
	open       bool
	reason     string
	next       string // "" when no transition is expected
	messageHas []string
	// messageLacks are words the message must not have.
	messageLacks []string
	overrideOld  bool
}

// evaluateCases are the rules a gate combines: windows, overrides, expiries and specs that do not parse.
func evaluateCases(t *testing.T) []evaluateCase {
	saturday := at(t, "2025-06-14T12:00:00+01:00")
	tuesdayMorning := at(t, "2025-06-17T10:00:00+01:00")
	tuesdayEvening := at(t, "2025-06-17T20:00:00+01:00")
	return []evaluateCase{
		{
			name: "nothing closes an empty gate", now: saturday,
			open: true, reason: gatingv1alpha1.ReasonDefault,
		},
		{
			name: "opened by setting closed to false, the close's message is not the open gate's",
			spec: gatingv1alpha1.GateSpec{Message: "freeze2"}, now: saturday,
			open: true, reason: gatingv1alpha1.ReasonDefault, messageHas: []string{"not closed by hand"}, messageLacks: []string{"freeze2"},
		},
		{
			name: "a manual close closes whatever the windows say",
			spec: gatingv1alpha1.GateSpec{Closed: true, Message: "release 1.4 sign-off pending", Windows: []gatingv1alpha1.GateWindow{businessHours}},
			now:  tuesdayMorning, open: false, reason: gatingv1alpha1.ReasonManual, messageHas: []string{"release 1.4 sign-off pending"},
		},
		{
			name: "a manual close beats an open override",
			spec: gatingv1alpha1.GateSpec{Closed: true, Override: override(gatingv1alpha1.StateOpen, saturday.Add(2*time.Hour), "hotfix")},
			now:  saturday, open: false, reason: gatingv1alpha1.ReasonManual,
		},
		{
			name: "an open override beats a freeze, until it expires",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{noDeployFriday}, Override: override(gatingv1alpha1.StateOpen, saturday.Add(2*time.Hour), "hotfix for INC-123")},
			now:  saturday, open: true, reason: gatingv1alpha1.ReasonOverride, next: "2025-06-14T14:00:00+01:00", messageHas: []string{"hotfix for INC-123"},
		},
		{
			name: "a closed override beats an open window",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{businessHours}, Override: override(gatingv1alpha1.StateClosed, at(t, "2025-06-18T09:00:00+01:00"), "")},
			now:  tuesdayMorning, open: false, reason: gatingv1alpha1.ReasonOverride, next: "2025-06-18T09:00:00+01:00",
		},
		{
			name: "an active closed window beats an active open window",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{
				windowSpec("0 0 * * *", london, 24*time.Hour, gatingv1alpha1.StateOpen), noDeployFriday,
			}},
			now: saturday, open: false, reason: gatingv1alpha1.ReasonWindow, next: "2025-06-16T08:00:00+01:00", messageHas: []string{"No Deploy Friday"},
		},
		{
			name: "with open windows the gate is closed outside them",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{businessHours}},
			now:  tuesdayEvening, open: false, reason: gatingv1alpha1.ReasonWindow, next: "2025-06-18T09:00:00+01:00", messageHas: []string{"outside every open window"},
		},
		{
			name: "with open windows the gate is open inside one",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{businessHours}},
			now:  tuesdayMorning, open: true, reason: gatingv1alpha1.ReasonWindow, next: "2025-06-17T17:00:00+01:00", messageHas: []string{"business hours"},
		},
		{
			name: "an inactive closed window leaves spec.closed to decide",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{noDeployFriday}},
			now:  tuesdayMorning, open: true, reason: gatingv1alpha1.ReasonDefault, next: "2025-06-20T18:00:00+01:00",
		},
		{
			name: "an expired override no longer applies and is reported",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{noDeployFriday}, Override: override(gatingv1alpha1.StateOpen, saturday.Add(-time.Hour), "")},
			now:  saturday, open: false, reason: gatingv1alpha1.ReasonWindow, next: "2025-06-16T08:00:00+01:00", messageHas: []string{"expired"}, overrideOld: true,
		},
		{
			name: "an invalid spec fails closed",
			spec: gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{windowSpec("0 18 * * FRI", "Europe/Londn", time.Hour, gatingv1alpha1.StateOpen)}},
			now:  saturday, open: false, reason: gatingv1alpha1.ReasonInvalid, messageHas: []string{"spec.windows[0].timeZone", "Europe/Londn"},
		},
	}
}

func TestEvaluateRules(t *testing.T) {
	for _, tc := range evaluateCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			d := Evaluate(tc.spec, tc.now)
			assert.Equal(t, tc.open, d.Open, d.Message)
			assert.Equal(t, tc.reason, d.Reason, d.Message)
			assert.Equal(t, tc.overrideOld, d.OverrideExpired)
			if tc.next == "" {
				assert.Nil(t, d.NextTransition)
			} else if assert.NotNil(t, d.NextTransition) {
				assert.True(t, at(t, tc.next).Equal(*d.NextTransition), "next transition %s, want %s", d.NextTransition, tc.next)
			}
			for _, part := range tc.messageHas {
				assert.Contains(t, d.Message, part)
			}
			for _, part := range tc.messageLacks {
				assert.NotContains(t, d.Message, part)
			}
		})
	}
}

func TestEvaluateOverrideExpiry(t *testing.T) {
	until := at(t, "2025-06-14T14:00:00+01:00")
	spec := gatingv1alpha1.GateSpec{
		Windows:  []gatingv1alpha1.GateWindow{noDeployFriday},
		Override: override(gatingv1alpha1.StateOpen, until, "hotfix"),
	}

	before := Evaluate(spec, until.Add(-time.Nanosecond))
	assert.True(t, before.Open)
	assert.Equal(t, gatingv1alpha1.ReasonOverride, before.Reason)
	assert.False(t, before.OverrideExpired)
	require.NotNil(t, before.NextTransition)
	assert.True(t, until.Equal(*before.NextTransition))

	after := Evaluate(spec, until)
	assert.False(t, after.Open, "the gate returns to what the windows say")
	assert.Equal(t, gatingv1alpha1.ReasonWindow, after.Reason)
	assert.True(t, after.OverrideExpired)
	assert.Contains(t, after.Message, "expired")
}

func TestEvaluateOverrideExpiryThatChangesNothing(t *testing.T) {
	// Closed until 14:00 inside a freeze that lasts until Monday: expiry changes the reason, not the state.
	until := at(t, "2025-06-14T14:00:00+01:00")
	spec := gatingv1alpha1.GateSpec{
		Windows:  []gatingv1alpha1.GateWindow{noDeployFriday},
		Override: override(gatingv1alpha1.StateClosed, until, ""),
	}
	d := Evaluate(spec, at(t, "2025-06-14T12:00:00+01:00"))
	assert.False(t, d.Open)
	assert.Equal(t, gatingv1alpha1.ReasonOverride, d.Reason)
	require.NotNil(t, d.NextEvaluation)
	assert.True(t, until.Equal(*d.NextEvaluation))
	require.NotNil(t, d.NextTransition)
	assert.True(t, at(t, "2025-06-16T08:00:00+01:00").Equal(*d.NextTransition))
}

func TestEvaluateOverlappingWindows(t *testing.T) {
	for _, kind := range []gatingv1alpha1.GateState{gatingv1alpha1.StateClosed, gatingv1alpha1.StateOpen} {
		t.Run(string(kind), func(t *testing.T) {
			spec := gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{
				described(windowSpec("0 9 * * MON", london, 3*time.Hour, kind), "first"),
				described(windowSpec("0 11 * * MON", london, 3*time.Hour, kind), "second"),
			}}
			d := Evaluate(spec, at(t, "2025-06-16T10:00:00+01:00"))
			assert.Equal(t, kind == gatingv1alpha1.StateOpen, d.Open)
			assert.Contains(t, d.Message, `"first"`)
			require.NotNil(t, d.NextTransition)
			assert.True(t, at(t, "2025-06-16T14:00:00+01:00").Equal(*d.NextTransition), "the windows merge until the second ends, got %s", d.NextTransition)
			require.NotNil(t, d.NextEvaluation)
			assert.True(t, at(t, "2025-06-16T11:00:00+01:00").Equal(*d.NextEvaluation), "the second window starting may change the message")

			later := Evaluate(spec, at(t, "2025-06-16T12:30:00+01:00"))
			assert.Equal(t, d.Open, later.Open)
			assert.Contains(t, later.Message, `"second"`)
		})
	}
}

// TestNextTransitionIsExact checks, for many instants across daylight-saving changes, that the
// state holds until NextTransition and flips exactly there, and that nothing in the decision
// changes before NextEvaluation.
func TestNextTransitionIsExact(t *testing.T) {
	hotfixUntil := at(t, "2025-03-29T15:00:00Z")
	specs := map[string]gatingv1alpha1.GateSpec{
		"freeze and open hours in two zones": {Windows: []gatingv1alpha1.GateWindow{
			noDeployFriday, windowSpec("0 9 * * 1-5", newYork, 8*time.Hour, gatingv1alpha1.StateOpen),
		}},
		"overlapping freezes and a nightly open window": {Windows: []gatingv1alpha1.GateWindow{
			windowSpec("0 1 * * *", newYork, 4*time.Hour, gatingv1alpha1.StateOpen),
			windowSpec("30 1 * * SAT,SUN", london, 2*time.Hour, gatingv1alpha1.StateClosed),
			windowSpec("0 2 * * SUN", newYork, 3*time.Hour, gatingv1alpha1.StateClosed),
		}},
		"override inside a freeze": {
			Windows:  []gatingv1alpha1.GateWindow{windowSpec("0 18 * * FRI", london, 62*time.Hour, gatingv1alpha1.StateClosed)},
			Override: override(gatingv1alpha1.StateOpen, hotfixUntil, "hotfix"),
		},
		"windows around the changed hours": {Windows: []gatingv1alpha1.GateWindow{
			windowSpec("30 1 * * *", newYork, time.Hour, gatingv1alpha1.StateOpen),
			windowSpec("30 2 * * *", newYork, time.Hour, gatingv1alpha1.StateOpen),
			windowSpec("15 1 * * *", london, 30*time.Minute, gatingv1alpha1.StateClosed),
		}},
	}
	ranges := [][2]string{
		{"2025-03-06T00:00:00Z", "2025-04-02T00:00:00Z"},
		{"2025-10-22T00:00:00Z", "2025-11-05T00:00:00Z"},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			for _, r := range ranges {
				for now := at(t, r[0]); now.Before(at(t, r[1])); now = now.Add(253 * time.Minute) {
					d := Evaluate(spec, now)
					end := now.Add(14 * 24 * time.Hour)
					if d.NextTransition != nil {
						next := *d.NextTransition
						require.True(t, next.After(now))
						require.NotNil(t, d.NextEvaluation)
						require.False(t, d.NextEvaluation.After(next))
						require.NotEqual(t, d.Open, Evaluate(spec, next).Open, "state must flip at %s (from %s)", next, now)
						end = next
					}
					for k := 1; k <= 40; k++ {
						sample := now.Add(end.Sub(now) * time.Duration(k) / 41)
						require.Equal(t, d.Open, Evaluate(spec, sample).Open, "state must hold at %s (from %s until %s)", sample, now, end)
					}
					require.Equal(t, d.Open, Evaluate(spec, end.Add(-time.Nanosecond)).Open)
					if d.NextEvaluation != nil {
						require.True(t, d.NextEvaluation.After(now))
						still := Evaluate(spec, d.NextEvaluation.Add(-time.Nanosecond))
						require.Equal(t, d.Reason, still.Reason)
						require.Equal(t, d.Message, still.Message, "nothing may change before %s", d.NextEvaluation)
					}
				}
			}
		})
	}
}

func TestEvaluateFindsTheEndOfALongFreezeFullOfOpenWindows(t *testing.T) {
	// Thirty seconds open at the start of every minute, inside a freeze of three weeks: tens of
	// thousands of window boundaries pass before the state can flip.
	spec := gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{
		windowSpec("* * * * *", london, 30*time.Second, gatingv1alpha1.StateOpen),
		windowSpec("0 0 1 6 *", london, 21*24*time.Hour, gatingv1alpha1.StateClosed),
	}}
	d := Evaluate(spec, at(t, "2025-06-03T12:00:10+01:00"))
	assert.False(t, d.Open)
	require.NotNil(t, d.NextTransition)
	assert.True(t, at(t, "2025-06-22T00:00:00+01:00").Equal(*d.NextTransition), "got %s", d.NextTransition)
	require.NotNil(t, d.NextEvaluation)
	assert.True(t, at(t, "2025-06-03T12:00:30+01:00").Equal(*d.NextEvaluation), "the open window closing changes nothing visible but is the next boundary")
}

func TestEvaluateReportsOverrideExpiryUnderAManualClose(t *testing.T) {
	now := at(t, "2025-06-14T12:00:00+01:00")
	until := now.Add(2 * time.Hour)
	spec := gatingv1alpha1.GateSpec{Closed: true, Override: override(gatingv1alpha1.StateOpen, until, "hotfix")}
	d := Evaluate(spec, now)
	assert.False(t, d.Open)
	assert.Nil(t, d.NextTransition, "nothing reopens a gate closed by hand")
	require.NotNil(t, d.NextEvaluation)
	assert.True(t, until.Equal(*d.NextEvaluation))
	assert.False(t, d.OverrideExpired)
	assert.True(t, Evaluate(spec, until).OverrideExpired)
}

// The on-call's bypass: open for an hour a gate closed by hand, then it is closed by hand again.
func TestEvaluateBypassOfAManualCloseEndsClosedByHand(t *testing.T) {
	now := at(t, "2025-06-14T12:00:00+01:00")
	until := now.Add(time.Hour)
	spec := gatingv1alpha1.GateSpec{Closed: true, Message: "release 1.4 sign-off pending"}
	spec.Override = NewOverride(spec, gatingv1alpha1.StateOpen, until, "hotfix for INC-123", now)
	require.NotNil(t, spec.Override.Replaces)
	assert.True(t, spec.Override.Replaces.Closed)

	d := Evaluate(spec, now)
	assert.True(t, d.Open, d.Message)
	assert.Equal(t, gatingv1alpha1.ReasonOverride, d.Reason)
	assert.Contains(t, d.Message, "hotfix for INC-123")
	require.NotNil(t, d.NextTransition)
	assert.True(t, until.Equal(*d.NextTransition))

	d = Evaluate(spec, until)
	assert.False(t, d.Open, d.Message)
	assert.Equal(t, gatingv1alpha1.ReasonManual, d.Reason)
	assert.Contains(t, d.Message, "release 1.4 sign-off pending")
	assert.Contains(t, d.Message, "back to what it replaced")
	assert.Nil(t, d.NextTransition)
	assert.True(t, d.OverrideExpired)
}

// A manual close made after an override was set is the emergency brake: it beats the override.
func TestEvaluateManualCloseAfterAnOverrideBeatsIt(t *testing.T) {
	now := at(t, "2025-06-14T12:00:00+01:00")
	spec := gatingv1alpha1.GateSpec{}
	spec.Override = NewOverride(spec, gatingv1alpha1.StateOpen, now.Add(time.Hour), "hotfix", now)
	assert.Nil(t, spec.Override.Replaces, "nothing to restore on a gate open by default")
	spec.Closed = true
	d := Evaluate(spec, now.Add(time.Minute))
	assert.False(t, d.Open)
	assert.Equal(t, gatingv1alpha1.ReasonManual, d.Reason)
}

// close --for 100h, then open --for 1m: once the minute ends the gate is closed again until the
// first override's own expiry, and then it follows its spec.
func TestEvaluateOverrideExpiryRestoresTheOverrideItReplaced(t *testing.T) {
	now := at(t, "2025-06-14T12:00:00+01:00")
	long := now.Add(100 * time.Hour)
	spec := gatingv1alpha1.GateSpec{}
	spec.Override = NewOverride(spec, gatingv1alpha1.StateClosed, long, "migration", now)
	spec.Override = NewOverride(spec, gatingv1alpha1.StateOpen, now.Add(time.Minute), "one deploy", now)
	require.NotNil(t, spec.Override.Replaces)
	assert.False(t, spec.Override.Replaces.Closed)
	require.Len(t, spec.Override.Replaces.Overrides, 1)

	d := Evaluate(spec, now)
	assert.True(t, d.Open, d.Message)
	require.NotNil(t, d.NextTransition)
	assert.True(t, now.Add(time.Minute).Equal(*d.NextTransition))

	d = Evaluate(spec, now.Add(time.Minute))
	assert.False(t, d.Open, d.Message)
	assert.Equal(t, gatingv1alpha1.ReasonOverride, d.Reason)
	assert.Contains(t, d.Message, "migration")
	assert.True(t, d.OverrideExpired)
	require.NotNil(t, d.NextTransition, "the restored override ends on its own")
	assert.True(t, long.Equal(*d.NextTransition))

	d = Evaluate(spec, long)
	assert.True(t, d.Open, d.Message)
	assert.Equal(t, gatingv1alpha1.ReasonDefault, d.Reason)
}

// Overrides stack: extending a bypass keeps what the first one replaced, expired ones drop out,
// and the list stays bounded.
func TestNewOverrideStacksWhatItReplaces(t *testing.T) {
	now := at(t, "2025-06-14T12:00:00+01:00")
	spec := gatingv1alpha1.GateSpec{Closed: true}
	spec.Override = NewOverride(spec, gatingv1alpha1.StateOpen, now.Add(time.Hour), "first", now)
	spec.Override = NewOverride(spec, gatingv1alpha1.StateOpen, now.Add(2*time.Hour), "longer", now.Add(30*time.Minute))
	require.NotNil(t, spec.Override.Replaces)
	assert.True(t, spec.Override.Replaces.Closed)
	assert.Equal(t, "first", spec.Override.Replaces.Overrides[0].Message)
	d := Evaluate(spec, now.Add(90*time.Minute))
	assert.True(t, d.Open, "the extension is still in force after the first one's end")
	assert.Equal(t, gatingv1alpha1.ReasonManual, Evaluate(spec, now.Add(2*time.Hour)).Reason)

	later := NewOverride(spec, gatingv1alpha1.StateClosed, now.Add(3*time.Hour), "", now.Add(61*time.Minute))
	require.Len(t, later.Replaces.Overrides, 1, "the expired first override is dropped")
	assert.Equal(t, "longer", later.Replaces.Overrides[0].Message)

	for i := range 2 * MaxReplacedOverrides {
		spec.Override = NewOverride(spec, gatingv1alpha1.StateOpen, now.Add(time.Duration(100+i)*time.Hour), "", now)
	}
	assert.Len(t, spec.Override.Replaces.Overrides, MaxReplacedOverrides)
	assert.NoError(t, ValidateSpec(spec))
}

func TestValidateSpecChecksReplacedOverrides(t *testing.T) {
	spec := gatingv1alpha1.GateSpec{Override: &gatingv1alpha1.GateOverride{
		State: gatingv1alpha1.StateOpen, Until: metav1.Now(),
		Replaces: &gatingv1alpha1.GateReplaced{Overrides: []gatingv1alpha1.GateOverrideState{{State: "ajar"}}},
	}}
	err := ValidateSpec(spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.override.replaces.overrides[0].state")
	assert.Contains(t, err.Error(), "spec.override.replaces.overrides[0].until")
}
