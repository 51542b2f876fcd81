package gate

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	gatingv1alpha1 "github.com/sluicehq/sluice/pkg/apis/gating/v1alpha1"
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

// maxEvents bounds the search for the next transition when window boundaries keep coming without
// flipping the state (e.g. open windows inside a long freeze). NextEvaluation is still exact.
const maxEvents = 4096

// Evaluate computes the effective state of a gate at now, by the first rule that applies:
//  1. spec.closed: closed (Manual). A manual close is the emergency brake; nothing opens it.
//  2. an unexpired spec.override: its state (Override). It beats every window.
//  3. an active closed window: closed (Window).
//  4. open windows exist: open only while one is active (Window).
//  5. otherwise open (Default).
//
// A spec that ValidateSpec rejects fails closed with reason Invalid. Evaluate ignores suspension:
// a suspended gate keeps the state in its status.
func Evaluate(spec gatingv1alpha1.GateSpec, now time.Time) Decision {
	var d Decision
	override := spec.Override
	overrideOn := override != nil && now.Before(override.Until.Time)
	d.OverrideExpired = override != nil && !overrideOn

	windows, errs := compileSpec(spec)
	if len(errs) > 0 {
		d.Reason = gatingv1alpha1.ReasonInvalid
		d.Message = "closed until the spec is fixed: " + errs.ToAggregate().Error()
		return d
	}

	s := state{spec: spec, windows: windows, overrideOn: overrideOn, active: make([]bool, len(windows))}
	for i, w := range windows {
		s.active[i] = w.activeAt(now)
	}
	d.Open, d.Reason = s.decide()
	cause := s.cause()
	var flipper *window
	if !spec.Closed {
		d.NextEvaluation, d.NextTransition, flipper = s.walk(now, d.Open)
	}
	d.Message = s.message(d, cause, flipper)
	return d
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
		if o.State != gatingv1alpha1.StateOpen && o.State != gatingv1alpha1.StateClosed {
			errs = append(errs, field.NotSupported(opath.Child("state"), o.State,
				[]gatingv1alpha1.GateState{gatingv1alpha1.StateOpen, gatingv1alpha1.StateClosed}))
		}
		if o.Until.IsZero() {
			errs = append(errs, field.Required(opath.Child("until"),
				"an override needs an expiry, e.g. \"2025-03-10T09:00:00Z\"; to change the state for good, set spec.closed"))
		}
	}
	return windows, errs
}

// state holds the inputs of the rules at one instant.
type state struct {
	spec       gatingv1alpha1.GateSpec
	windows    []*window
	overrideOn bool
	active     []bool
}

func (s *state) decide() (open bool, reason string) {
	switch {
	case s.spec.Closed:
		return false, gatingv1alpha1.ReasonManual
	case s.overrideOn:
		return s.spec.Override.State == gatingv1alpha1.StateOpen, gatingv1alpha1.ReasonOverride
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
	if s.spec.Closed || s.overrideOn {
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

// walk steps through window boundaries and the override expiry after now. It returns the first
// of them, the first at which open flips, and a window changing then (nil if none does).
func (s *state) walk(now time.Time, open bool) (first, flip *time.Time, by *window) {
	next := make([]time.Time, len(s.windows))
	pending := make([]bool, len(s.windows))
	for i, w := range s.windows {
		next[i], pending[i] = w.nextChange(now, s.active[i])
	}
	end := now.Add(horizon)
	for range maxEvents {
		at, ok := time.Time{}, false
		if s.overrideOn {
			at, ok = s.spec.Override.Until.UTC(), true
		}
		for i := range s.windows {
			if pending[i] && (!ok || next[i].Before(at)) {
				at, ok = next[i], true
			}
		}
		if !ok || at.After(end) {
			return first, nil, nil
		}
		if first == nil {
			first = &at
		}
		if s.overrideOn && !at.Before(s.spec.Override.Until.Time) {
			s.overrideOn = false
		}
		by = nil
		for i, w := range s.windows {
			if pending[i] && !next[i].After(at) {
				s.active[i] = !s.active[i]
				next[i], pending[i] = w.nextChange(at, s.active[i])
				if by == nil {
					by = w
				}
			}
		}
		if nowOpen, _ := s.decide(); nowOpen != open {
			return first, &at, by
		}
	}
	return first, nil, nil
}

// message explains d. Times of window changes are shown in the zone of the window that changes.
func (s *state) message(d Decision, cause, flipper *window) string {
	var b strings.Builder
	switch d.Reason {
	case gatingv1alpha1.ReasonManual:
		b.WriteString(orDefault(s.spec.Message, "closed by hand (spec.closed is true)"))
	case gatingv1alpha1.ReasonOverride:
		o := s.spec.Override
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
		b.WriteString(orDefault(s.spec.Message, "open: not closed by hand, and no override or closed window applies"))
	}
	overrideEnds := d.Reason == gatingv1alpha1.ReasonOverride && d.NextTransition != nil && d.NextTransition.Equal(s.spec.Override.Until.Time)
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
		fmt.Fprintf(&b, "; the override until %s has expired", formatTime(s.spec.Override.Until.Time, nil))
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
