package gate

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// MaxWindowDuration keeps every window computation bounded.
const MaxWindowDuration = 366 * day

// horizon is how far ahead transitions are searched for.
const horizon = searchDays * day

// window is a validated spec.windows entry.
//
// In wall time a window covers [start, start+duration) for every start of its schedule. An instant t
// is inside the window when the highest clock reading so far, highestWallBy(t), is covered: so a
// window opens the first time the clock shows its start (or jumps past it) and closes the first time
// the clock shows its end (or jumps past it).
type window struct {
	index int
	spec  gatingv1alpha1.GateWindow
	sched *schedule
	dur   time.Duration
	loc   *time.Location
	// runEnds[i] is where, counted from midnight, the windows started at starts[i] and at the
	// starts that follow it without a gap stop covering.
	runEnds []time.Duration
}

func compileWindow(index int, spec gatingv1alpha1.GateWindow, path *field.Path) (*window, field.ErrorList) {
	var errs field.ErrorList
	sched, err := parseSchedule(spec.Schedule)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("schedule"), spec.Schedule, err.Error()))
	}
	loc, err := loadLocation(spec.TimeZone)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("timeZone"), spec.TimeZone, err.Error()))
	}
	dur := spec.Duration.Duration
	switch {
	case dur <= 0:
		errs = append(errs, field.Invalid(path.Child("duration"), spec.Duration.Duration.String(),
			"must be positive, e.g. \"2h\" or \"90m\""))
	case dur > MaxWindowDuration:
		errs = append(errs, field.Invalid(path.Child("duration"), spec.Duration.Duration.String(),
			"must be at most 8784h (a leap year); for a longer freeze close the gate by hand"))
	}
	if spec.Kind != gatingv1alpha1.StateOpen && spec.Kind != gatingv1alpha1.StateClosed {
		errs = append(errs, field.NotSupported(path.Child("kind"), spec.Kind,
			[]gatingv1alpha1.GateState{gatingv1alpha1.StateOpen, gatingv1alpha1.StateClosed}))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	w := &window{index: index, spec: spec, sched: sched, dur: dur, loc: loc}
	w.runEnds = make([]time.Duration, len(sched.starts))
	for i := len(sched.starts) - 1; i >= 0; i-- {
		w.runEnds[i] = sched.starts[i] + dur
		if i+1 < len(sched.starts) && sched.starts[i+1] <= w.runEnds[i] {
			w.runEnds[i] = w.runEnds[i+1]
		}
	}
	return w, nil
}

func (w *window) closes() bool { return w.spec.Kind == gatingv1alpha1.StateClosed }

func (w *window) name() string {
	if w.spec.Description != "" {
		return fmt.Sprintf("window %q", w.spec.Description)
	}
	return fmt.Sprintf("spec.windows[%d] (%q in %s)", w.index, w.spec.Schedule, w.loc)
}

// coveringStart is the latest start whose window covers wall time at.
func (w *window) coveringStart(at time.Time) (time.Time, int, bool) {
	return w.sched.latestStart(at, at.Add(-w.dur))
}

// coverEnd is the first wall time at or after at that no window covers, if it comes before limit.
func (w *window) coverEnd(at, limit time.Time) (time.Time, bool) {
	start, i, ok := w.coveringStart(at)
	if !ok {
		return at, true
	}
	if w.neverEnds() {
		return time.Time{}, false
	}
	end := midnight(start).Add(w.runEnds[i])
	// Each round moves to a start on a later day.
	for range 2 * searchDays {
		if end.After(limit) {
			return time.Time{}, false
		}
		start, i, ok = w.coveringStart(end)
		if !ok {
			return end, true
		}
		end = midnight(start).Add(w.runEnds[i])
	}
	return time.Time{}, false
}

// neverEnds reports a window that, once active, stays active: it starts every day, and the
// windows of one day overlap each other and the first window of the next day.
func (w *window) neverEnds() bool {
	first, last := 0, len(w.runEnds)-1
	return w.sched.everyDay && w.runEnds[first] == w.runEnds[last] && w.runEnds[first] >= w.sched.starts[first]+day
}

func (w *window) activeAt(t time.Time) bool {
	_, _, ok := w.coveringStart(highestWallBy(t, w.loc))
	return ok
}

// nextChange is the first instant after t at which activeAt differs from active, its value at t.
// It reports false when that is beyond the horizon.
func (w *window) nextChange(t time.Time, active bool) (time.Time, bool) {
	limit := wallAt(t, w.loc).Add(horizon)
	cur := t
	// More than one round only when the clocks jump over a whole gap or window.
	for range 8 {
		at := highestWallBy(cur, w.loc)
		var edge time.Time
		var ok bool
		if active {
			edge, ok = w.coverEnd(at, limit)
		} else {
			edge, ok = w.sched.nextStart(at, limit)
		}
		if !ok {
			return time.Time{}, false
		}
		change := firstInstantShowing(edge, w.loc)
		if !change.After(cur) {
			return time.Time{}, false
		}
		if w.activeAt(change) != active {
			return change, true
		}
		cur = change
	}
	return time.Time{}, false
}
