package gate

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// Decision is the effective state of a gate at one instant.
type Decision struct {
	Open    bool
	Reason  string // one of the gatingv1alpha1.Reason* constants
	Message string
	// NextTransition is the first instant after now at which Open flips if the spec stays as it
	// is; nil when no window or override will flip it.
	NextTransition *time.Time
	// NextEvaluation is the first instant after now at which any window starts or ends or the
	// override expires, so Reason and Message can change even when Open does not. It is never
	// after NextTransition; a controller requeues exactly then.
	NextEvaluation *time.Time
	// OverrideExpired reports that spec.override is set but no longer applies.
	OverrideExpired bool
}

// Evaluate computes the effective state of a gate at now, by the first rule that applies:
//  1. spec.closed: closed (Manual). A manual close is the emergency brake: no override opens it,
//     except one set as a bypass of it (override.replaces.closed), and only until it expires.
//  2. an unexpired spec.override: its state (Override). It beats every window.
//  3. an expired spec.override: the first override it replaced that has not expired (Override).
//  4. an active closed window: closed (Window).
//  5. open windows exist: open only while one is active (Window).
//  6. otherwise open (Default).
//
// So an override's expiry restores what it replaced. A spec that ValidateSpec rejects fails
// closed with reason Invalid. Evaluate ignores suspension: a suspended gate keeps the state in
// its status.
func Evaluate(spec gatingv1alpha1.GateSpec, now time.Time) Decision {
	var d Decision
	d.OverrideExpired = spec.Override != nil && !now.Before(spec.Override.Until.Time)

	windows, errs := compileSpec(spec)
	if len(errs) > 0 {
		d.Reason = gatingv1alpha1.ReasonInvalid
		d.Message = "closed until the spec is fixed: " + errs.ToAggregate().Error()
		return d
	}

	s := state{spec: spec, windows: windows, overrides: overrideLayers(spec.Override), active: make([]bool, len(windows))}
	s.override = s.overrideAt(now)
	for i, w := range windows {
		s.active[i] = w.activeAt(now)
	}
	d.Open, d.Reason = s.decide()
	cause := s.cause()
	var flipper *window
	switch {
	case !s.manual():
		inForce := s.override
		d.NextEvaluation, d.NextTransition, flipper = s.walk(now, d.Open)
		s.override = inForce
	case s.override == 0:
		// Closed by hand for good, but the override expiring is still news for status.
		until := spec.Override.Until.UTC()
		d.NextEvaluation = &until
	}
	d.Message = s.message(d, cause, flipper)
	return d
}

// overrideLayers lists spec.override and the overrides it replaced, in the order they apply:
// at any instant the first one that has not expired is in force.
func overrideLayers(o *gatingv1alpha1.GateOverride) []gatingv1alpha1.GateOverrideState {
	if o == nil {
		return nil
	}
	layers := []gatingv1alpha1.GateOverrideState{{State: o.State, Until: o.Until, Message: o.Message}}
	if o.Replaces != nil {
		layers = append(layers, o.Replaces.Overrides...)
	}
	return layers
}

func compileSpec(spec gatingv1alpha1.GateSpec) ([]*window, field.ErrorList) {
	var errs field.ErrorList
	windows := make([]*window, 0, len(spec.Windows))
	path := field.NewPath("spec", "windows")
	for i, ws := range spec.Windows {
		w, werrs := compileWindow(i, ws, path.Index(i))
		errs = append(errs, werrs...)
		if w != nil {
			windows = append(windows, w)
		}
	}
	if o := spec.Override; o != nil {
		opath := field.NewPath("spec", "override")
		errs = append(errs, validateOverride(opath, o.State, o.Until)...)
		if o.Replaces != nil {
			rpath := opath.Child("replaces", "overrides")
			for i, r := range o.Replaces.Overrides {
				errs = append(errs, validateOverride(rpath.Index(i), r.State, r.Until)...)
			}
		}
	}
	return windows, errs
}

func validateOverride(path *field.Path, state gatingv1alpha1.GateState, until metav1.Time) field.ErrorList {
	var errs field.ErrorList
	if state != gatingv1alpha1.StateOpen && state != gatingv1alpha1.StateClosed {
		errs = append(errs, field.NotSupported(path.Child("state"), state,
			[]gatingv1alpha1.GateState{gatingv1alpha1.StateOpen, gatingv1alpha1.StateClosed}))
	}
	if until.IsZero() {
		errs = append(errs, field.Required(path.Child("until"),
			"an override needs an expiry, e.g. \"2025-03-10T09:00:00Z\"; to change the state for good, set spec.closed"))
	}
	return errs
}

// state holds the inputs of the rules at one instant.
type state struct {
	spec      gatingv1alpha1.GateSpec
	windows   []*window
	overrides []gatingv1alpha1.GateOverrideState
	// override is the index in overrides of the override in force, -1 for none.
	override int
	active   []bool
	// Used by walk: when each window next changes, if it does within the horizon.
	next    []time.Time
	pending []bool
}

// overrideAt is the index of the override in force at t, -1 for none.
func (s *state) overrideAt(t time.Time) int {
	for i, o := range s.overrides {
		if t.Before(o.Until.Time) {
			return i
		}
	}
	return -1
}

// manual reports whether the manual close decides: spec.closed, unless spec.override is a bypass
// of it that has not expired.
func (s *state) manual() bool {
	if !s.spec.Closed {
		return false
	}
	bypass := s.spec.Override != nil && s.spec.Override.Replaces != nil && s.spec.Override.Replaces.Closed
	return !bypass || s.override != 0
}

func (s *state) decide() (open bool, reason string) {
	switch {
	case s.manual():
		return false, gatingv1alpha1.ReasonManual
	case s.override >= 0:
		return s.overrides[s.override].State == gatingv1alpha1.StateOpen, gatingv1alpha1.ReasonOverride
	}
	hasOpenWindows, inOpenWindow := false, false
	for i, w := range s.windows {
		if w.closes() {
			if s.active[i] {
				return false, gatingv1alpha1.ReasonWindow
			}
			continue
		}
		hasOpenWindows = true
		inOpenWindow = inOpenWindow || s.active[i]
	}
	if hasOpenWindows {
		return inOpenWindow, gatingv1alpha1.ReasonWindow
	}
	return true, gatingv1alpha1.ReasonDefault
}

// cause is the window that decides, when one does: the first active closed window, else the
// first active open window.
func (s *state) cause() *window {
	if s.manual() || s.override >= 0 {
		return nil
	}
	var opening *window
	for i, w := range s.windows {
		if !s.active[i] {
			continue
		}
		if w.closes() {
			return w
		}
		if opening == nil {
			opening = w
		}
	}
	return opening
}

// walk finds the first window boundary or override expiry after now, and the first instant at
// which open flips, with a window that changes then (nil for the override). Rather than stepping
// through every boundary, it jumps to the earliest instant at which the state could flip and
// recomputes the windows there, so open windows inside a long freeze cost nothing.
func (s *state) walk(now time.Time, open bool) (first, flip *time.Time, by *window) {
	s.next = make([]time.Time, len(s.windows))
	s.pending = make([]bool, len(s.windows))
	earliest := func(t time.Time) {
		if first == nil || t.Before(*first) {
			first = &t
		}
	}
	for i, w := range s.windows {
		s.next[i], s.pending[i] = w.nextChange(now, s.active[i])
		if s.pending[i] {
			earliest(s.next[i])
		}
	}
	if s.override >= 0 {
		earliest(s.overrides[s.override].Until.UTC())
	}

	end := now.Add(horizon)
	for range maxJumps {
		at, cause, ok := s.earliestFlip(open)
		if !ok || at.After(end) {
			return first, nil, nil
		}
		s.override = s.overrideAt(at)
		for i, w := range s.windows {
			if s.pending[i] && !s.next[i].After(at) {
				s.active[i] = w.activeAt(at)
				s.next[i], s.pending[i] = w.nextChange(at, s.active[i])
			}
		}
		if nowOpen, _ := s.decide(); nowOpen != open {
			return first, &at, cause
		}
	}
	return first, nil, nil
}

// maxJumps bounds walk; each jump passes at least one window boundary.
const maxJumps = 1024

// earliestFlip is the earliest instant at which the state, open or not, could flip given the
// windows' next changes: before it the rule that decides now keeps deciding the same way.
// It reports false when nothing pending can flip the state.
func (s *state) earliestFlip(open bool) (time.Time, *window, bool) {
	if s.manual() {
		// Closed by hand for good: nothing in time opens it.
		return time.Time{}, nil, false
	}
	if s.override >= 0 {
		return s.overrides[s.override].Until.UTC(), nil, true
	}
	var at time.Time
	var cause *window
	found := false
	consider := func(i int, latest bool) {
		if !found || (latest && s.next[i].After(at)) || (!latest && s.next[i].Before(at)) {
			at, cause, found = s.next[i], s.windows[i], true
		}
	}
	if !open {
		freeze := false
		for i, w := range s.windows {
			if w.closes() && s.active[i] {
				// Closed by windows: every active freeze must end first.
				if !s.pending[i] {
					return time.Time{}, nil, false
				}
				freeze = true
				consider(i, true)
			}
		}
		if freeze {
			return at, cause, true
		}
		// Closed outside the open windows: one of them must start.
		for i, w := range s.windows {
			if !w.closes() && s.pending[i] {
				consider(i, false)
			}
		}
		return at, cause, found
	}

	// Open: a freeze may start, or every active open window may end.
	var ends time.Time
	var endCause *window
	endsKnown, endless := false, false
	for i, w := range s.windows {
		switch {
		case w.closes() && s.pending[i]:
			consider(i, false)
		case !w.closes() && s.active[i] && !s.pending[i]:
			endless = true
		case !w.closes() && s.active[i] && (!endsKnown || s.next[i].After(ends)):
			ends, endCause, endsKnown = s.next[i], w, true
		}
	}
	if endsKnown && !endless && (!found || ends.Before(at)) {
		at, cause, found = ends, endCause, true
	}
	return at, cause, found
}

// message explains d. Times of window changes are shown in the zone of the window that changes.
func (s *state) message(d Decision, cause, flipper *window) string {
	var b strings.Builder
	switch d.Reason {
	case gatingv1alpha1.ReasonManual:
		b.WriteString(orDefault(s.spec.Message, "closed by hand (spec.closed is true)"))
	case gatingv1alpha1.ReasonOverride:
		o := s.overrides[s.override]
		fmt.Fprintf(&b, "%s by override until %s", o.State, formatTime(o.Until.Time, nil))
		if o.Message != "" {
			fmt.Fprintf(&b, ": %s", o.Message)
		}
	case gatingv1alpha1.ReasonWindow:
		switch {
		case cause == nil:
			b.WriteString("closed outside every open window")
		case cause.closes():
			fmt.Fprintf(&b, "closed by %s", cause.name())
		default:
			fmt.Fprintf(&b, "open during %s", cause.name())
		}
	default:
		// spec.message says why the gate is closed by hand: once closed is false it is stale,
		// and an open gate must not report the close's reason as its own.
		b.WriteString("not closed by hand, and no override or closed window applies")
	}
	overrideEnds := d.Reason == gatingv1alpha1.ReasonOverride && d.NextTransition != nil && d.NextTransition.Equal(s.overrides[s.override].Until.Time)
	if d.NextTransition != nil && !overrideEnds {
		verb := "opens"
		if d.Open {
			verb = "closes"
		}
		var loc *time.Location
		if flipper != nil {
			loc = flipper.loc
		}
		fmt.Fprintf(&b, "; %s at %s", verb, formatTime(*d.NextTransition, loc))
	}
	if d.OverrideExpired {
		fmt.Fprintf(&b, "; the override until %s has expired and the gate is back to what it replaced", formatTime(s.spec.Override.Until.Time, nil))
	}
	return b.String()
}

// formatTime shows an instant in the zone of the window it belongs to, so people read local time.
func formatTime(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.RFC3339)
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
