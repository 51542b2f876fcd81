package gatestatus

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	gatelogic "github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// Friday 13 June 2025, 17:00 in London (BST, +01:00).
var friday = time.Date(2025, 6, 13, 16, 0, 0, 0, time.UTC)

func noDeployFriday() gatingv1alpha1.GateWindow {
	return gatingv1alpha1.GateWindow{
		Schedule: "0 18 * * FRI", Duration: metav1.Duration{Duration: 62 * time.Hour}, TimeZone: "Europe/London",
		Kind: gatingv1alpha1.StateClosed, Description: "No Deploy Friday",
	}
}

func newGate(spec gatingv1alpha1.GateSpec) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "prod", Generation: 1}, Spec: spec}
}

// evolve applies NextStatus as the controller would, returning the gate with its new status.
func evolve(g *gatingv1alpha1.Gate, now time.Time) (*gatingv1alpha1.Gate, Outcome) {
	st, out := NextStatus(g, now, Observed{})
	next := g.DeepCopy()
	next.Status = st
	return next, out
}

func TestNextStatusFollowsAWindowAndRequeuesExactlyAtItsEdges(t *testing.T) {
	g := newGate(gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{noDeployFriday()}})
	g, out := evolve(g, friday)
	assert.True(t, out.Transitioned, "the first evaluation is recorded")
	assert.True(t, g.Status.Open)
	assert.Equal(t, gatingv1alpha1.ReasonDefault, g.Status.Reason)
	assert.Equal(t, time.Hour, out.Requeue, "18:00 London is an hour away")
	require.NotNil(t, g.Status.NextTransitionTime)
	assert.True(t, g.Status.NextTransitionTime.Time.Equal(friday.Add(time.Hour)))
	assert.True(t, conditions.IsTrue(g.Status.Conditions, gatingv1alpha1.ConditionOpen))
	assert.True(t, conditions.IsTrue(g.Status.Conditions, conditions.Ready))
	assert.Equal(t, int64(1), g.Status.ObservedGeneration)
	assert.Equal(t, int64(1), conditions.Get(g.Status.Conditions, gatingv1alpha1.ConditionOpen).ObservedGeneration)

	// Woken a little early (it never is, but a clock may step): nothing changes, and it asks again.
	same, out := evolve(g, friday.Add(time.Hour-time.Millisecond))
	assert.False(t, out.Transitioned)
	assert.Equal(t, time.Millisecond, out.Requeue)
	assert.Equal(t, g.Status.History, same.Status.History)

	closed, out := evolve(g, friday.Add(time.Hour))
	assert.True(t, out.Transitioned)
	assert.False(t, closed.Status.Open)
	assert.Equal(t, gatingv1alpha1.ReasonWindow, closed.Status.Reason)
	assert.Contains(t, closed.Status.Message, `"No Deploy Friday"`)
	assert.False(t, conditions.IsTrue(closed.Status.Conditions, gatingv1alpha1.ConditionOpen))
	assert.Equal(t, 62*time.Hour, out.Requeue, "Monday 08:00 London")
	require.Len(t, closed.Status.History, 2)
	assert.Equal(t, gatingv1alpha1.StateClosed, closed.Status.History[0].State, "newest first")
	assert.True(t, closed.Status.LastTransitionTime.Time.Equal(friday.Add(time.Hour)))
}

func TestNextStatusKeepsABoundedHistory(t *testing.T) {
	g := newGate(gatingv1alpha1.GateSpec{})
	now := friday
	for i := range 2 * gatingv1alpha1.MaxHistory {
		g.Spec.Closed = i%2 == 0
		g.Generation++
		g, _ = evolve(g, now)
		now = now.Add(time.Minute)
	}
	assert.Len(t, g.Status.History, gatingv1alpha1.MaxHistory)
	assert.True(t, g.Status.History[0].Time.Time.After(g.Status.History[1].Time.Time))
}

func TestNextStatusReportsAnExpiredOverrideOnce(t *testing.T) {
	until := friday.Add(2 * time.Hour)
	g := newGate(gatingv1alpha1.GateSpec{
		Windows:  []gatingv1alpha1.GateWindow{noDeployFriday()},
		Override: &gatingv1alpha1.GateOverride{State: gatingv1alpha1.StateOpen, Until: metav1.NewTime(until), Message: "hotfix INC-7"},
	})
	g, out := evolve(g, friday.Add(90*time.Minute))
	assert.True(t, g.Status.Open)
	assert.Equal(t, gatingv1alpha1.ReasonOverride, g.Status.Reason)
	assert.Equal(t, 30*time.Minute, out.Requeue, "wakes when the override expires")
	assert.Nil(t, g.Status.ExpiredOverride)

	g, out = evolve(g, until)
	assert.True(t, out.OverrideExpired)
	assert.True(t, out.Transitioned)
	assert.False(t, g.Status.Open, "back to the freeze")
	require.NotNil(t, g.Status.ExpiredOverride)
	assert.Equal(t, "hotfix INC-7", g.Status.ExpiredOverride.Message)

	_, out = evolve(g, until.Add(time.Minute))
	assert.False(t, out.OverrideExpired, "reported once, kept in status")

	g.Spec.Override = nil
	g, _ = evolve(g, until.Add(2*time.Minute))
	assert.Nil(t, g.Status.ExpiredOverride)
}

func TestNextStatusFreezesASuspendedGate(t *testing.T) {
	g := newGate(gatingv1alpha1.GateSpec{})
	g, _ = evolve(g, friday)
	require.True(t, g.Status.Open)

	g.Annotations = map[string]string{suspend.Annotation: "audit, ask #platform"}
	g.Spec.Closed = true
	g.Generation++
	g, out := evolve(g, friday.Add(time.Minute))
	assert.False(t, out.Transitioned)
	assert.True(t, g.Status.Open, "the state is kept")
	assert.Equal(t, gatingv1alpha1.ReasonSuspended, g.Status.Reason)
	assert.Contains(t, g.Status.Message, "audit, ask #platform")
	assert.Zero(t, out.Requeue, "a frozen gate has nothing to wait for")
	assert.Equal(t, g.Generation, g.Status.ObservedGeneration, "the spec was seen, and deliberately not applied")
	assert.Equal(t, "audit, ask #platform", conditions.Get(g.Status.Conditions, conditions.Suspended).Message)

	delete(g.Annotations, suspend.Annotation)
	g, out = evolve(g, friday.Add(2*time.Minute))
	assert.True(t, out.Transitioned)
	assert.False(t, g.Status.Open)
	assert.Nil(t, conditions.Get(g.Status.Conditions, conditions.Suspended))

	fresh := newGate(gatingv1alpha1.GateSpec{Suspend: true})
	fresh, out = evolve(fresh, friday)
	assert.False(t, fresh.Status.Open, "a gate suspended before its first evaluation fails closed")
	assert.True(t, out.Transitioned)
	assert.NotNil(t, conditions.Get(fresh.Status.Conditions, gatingv1alpha1.ConditionOpen))
}

func TestNextStatusStallsOnASpecThatCannotBeEvaluated(t *testing.T) {
	w := noDeployFriday()
	w.TimeZone = "Europe/Londn"
	g, out := evolve(newGate(gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{w}}), friday)
	assert.False(t, g.Status.Open)
	assert.Equal(t, gatingv1alpha1.ReasonInvalid, g.Status.Reason)
	assert.Zero(t, out.Requeue, "no retry loop: only an edit can fix it")
	stalled := conditions.Get(g.Status.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	assert.Contains(t, stalled.Message, "spec.windows[0].timeZone")
	assert.False(t, conditions.IsTrue(g.Status.Conditions, conditions.Ready))

	g.Spec.Windows[0].TimeZone = "Europe/London"
	g.Generation++
	g, _ = evolve(g, friday)
	assert.Nil(t, conditions.Get(g.Status.Conditions, conditions.Stalled))
	assert.True(t, g.Status.Open)
}

func TestNextStatusReportsHeldObjects(t *testing.T) {
	held := make([]gatingv1alpha1.HeldObject, gatingv1alpha1.MaxHeld)
	for i := range held {
		held[i] = gatingv1alpha1.HeldObject{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: fmt.Sprintf("k%03d", i)}
	}
	st, _ := NextStatus(newGate(gatingv1alpha1.GateSpec{Closed: true}), friday, Observed{Held: held, Holding: 1000})
	assert.Equal(t, int32(1000), st.Holding)
	assert.Equal(t, held, st.Held)
}

func TestNextStatusStallsOnACycleOfGates(t *testing.T) {
	g := newGate(gatingv1alpha1.GateSpec{})
	self := gatelogic.Ref{Namespace: "apps", Name: "prod"}
	st, _ := NextStatus(g, friday, Observed{Cycle: []gatelogic.Ref{self, {Namespace: "apps", Name: "staging"}, self}})
	stalled := conditions.Get(st.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	assert.Equal(t, gatingv1alpha1.ReasonGateCycle, stalled.Reason)
	assert.Contains(t, stalled.Message, "gates apps/prod -> apps/staging -> apps/prod")
	assert.Contains(t, stalled.Message, "remove one of them")
	assert.True(t, st.Open, "the gate itself is still evaluated: only its references are ignored")
	assert.False(t, conditions.IsTrue(st.Conditions, conditions.Ready))

	st, _ = NextStatus(g, friday, Observed{Cycle: []gatelogic.Ref{self, self}})
	assert.Contains(t, conditions.Get(st.Conditions, conditions.Stalled).Message, "gate apps/prod names itself")

	g.Status = st
	st, _ = NextStatus(g, friday, Observed{})
	assert.Nil(t, conditions.Get(st.Conditions, conditions.Stalled), "once the cycle is broken the gate is Ready again")
	assert.True(t, conditions.IsTrue(st.Conditions, conditions.Ready))
}

// A 200 KB suspend reason is not copied whole, and a message quoting a suspended gate's message
// quoting another does not grow each time it is copied.
func TestNextStatusBoundsSuspendReasons(t *testing.T) {
	g := newGate(gatingv1alpha1.GateSpec{Closed: true})
	g, _ = evolve(g, friday)
	g.Annotations = map[string]string{suspend.Annotation: strings.Repeat("é", 100_000)}
	g, _ = evolve(g, friday.Add(time.Minute))
	assert.Equal(t, gatingv1alpha1.ReasonSuspended, g.Status.Reason)
	assert.LessOrEqual(t, len(g.Status.Message), MaxMessage)
	assert.True(t, utf8.ValidString(g.Status.Message))
	for _, h := range g.Status.History {
		assert.LessOrEqual(t, len(h.Message), MaxMessage)
	}
	for range 5 {
		g.Annotations[suspend.Annotation] = "held: gate apps/prod is closed (Suspended: " + g.Status.Message + ")"
		g, _ = evolve(g, friday.Add(2*time.Minute))
		assert.LessOrEqual(t, len(g.Status.Message), MaxMessage)
	}
}

func TestNextStatusReadyMessageNamesTheStateOnce(t *testing.T) {
	g, _ := evolve(newGate(gatingv1alpha1.GateSpec{}), friday)
	assert.Equal(t, "open: not closed by hand, and no override or closed window applies", conditions.Get(g.Status.Conditions, conditions.Ready).Message)
	g, _ = evolve(newGate(gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{noDeployFriday()}}), friday.Add(2*time.Hour))
	assert.True(t, strings.HasPrefix(conditions.Get(g.Status.Conditions, conditions.Ready).Message, "closed by window"))
}

func TestNextStatusReportsApprovalsAndRequeuesAtTheirExpiry(t *testing.T) {
	until := metav1.NewTime(friday.Add(30 * time.Minute))
	g := newGate(gatingv1alpha1.GateSpec{Closed: true, Approvals: []gatingv1alpha1.GateApproval{
		{Revision: "main@sha1:" + strings.Repeat("a", 40), By: "alice"},
		{Revision: "6.0.1", Until: &until},
	}})
	g, out := evolve(g, friday)
	require.Len(t, g.Status.Approvals, 2)
	assert.Equal(t, "alice", g.Status.Approvals[0].By)
	require.NotNil(t, g.Status.Approvals[0].At, "an approval without a time is dated when the controller first sees it")
	assert.True(t, g.Status.Approvals[0].At.Time.Equal(friday))
	assert.Equal(t, "main@sha1:aaaaaaaaaaaa, 6.0.1", g.Status.Approved)
	assert.False(t, g.Status.Open, "approvals let revisions through; they do not open the gate")
	assert.Equal(t, 30*time.Minute, out.Requeue, "evaluated again when the approval expires")

	g, out = evolve(g, until.Time)
	require.Len(t, g.Status.Approvals, 1, "the expired approval is dropped from status")
	assert.True(t, g.Status.Approvals[0].At.Time.Equal(friday), "the first time stays")
	assert.Equal(t, "main@sha1:aaaaaaaaaaaa", g.Status.Approved)
	assert.Zero(t, out.Requeue, "nothing else will change")
}
