package gate

import (
	"fmt"
	"sync"
	"time"

	// Embedded so time zones resolve in minimal container images without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// Windows are computed on "wall" times: the reading of a local clock, stored as a UTC time.Time
// with the same fields. Wall arithmetic never meets a daylight-saving change; the three functions
// below are the only places where wall times and instants meet.

var locations sync.Map // name -> *time.Location; loading a zone reads and parses tzdata.

func loadLocation(name string) (*time.Location, error) {
	if name == "" {
		name = "UTC"
	}
	if name == "Local" {
		return nil, fmt.Errorf("Local depends on the machine the controller runs on; use an IANA name such as Europe/London")
	}
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone; use an IANA name such as Europe/London, America/New_York or UTC")
	}
	locations.Store(name, loc)
	return loc, nil
}

func offsetAt(t time.Time, loc *time.Location) time.Duration {
	_, off := t.In(loc).Zone()
	return time.Duration(off) * time.Second
}

// wallAt is the local clock reading at instant t.
func wallAt(t time.Time, loc *time.Location) time.Time {
	return t.UTC().Add(offsetAt(t, loc))
}

// highestWallBy is the highest clock reading at or before instant t. It differs from wallAt only
// in the hour repeated after clocks fall back, when the clock has already shown later times.
func highestWallBy(t time.Time, loc *time.Location) time.Time {
	w := wallAt(t, loc)
	start, _ := t.In(loc).ZoneBounds()
	if start.IsZero() {
		return w
	}
	if before := wallAt(start.Add(-time.Nanosecond), loc); before.After(w) {
		return before
	}
	return w
}

// firstInstantShowing is the first instant at which the local clock shows w or later: the first
// of two readings when clocks fall back, and the moment of the jump when clocks skip w.
// It is monotonic in w, which keeps windows in the same order as their wall times.
func firstInstantShowing(w time.Time, loc *time.Location) time.Time {
	// Offsets a day either side bracket any single transition near w.
	early := w.Add(-offsetAt(w.Add(-24*time.Hour), loc))
	late := w.Add(-offsetAt(w.Add(24*time.Hour), loc))
	if late.Before(early) {
		early, late = late, early
	}
	for _, t := range [...]time.Time{early, late} {
		if wallAt(t, loc).Equal(w) {
			return t.UTC()
		}
	}
	// w was skipped: the clock jumped over it at the start of the zone in effect after the jump.
	start, _ := late.In(loc).ZoneBounds()
	if start.IsZero() || start.After(late) {
		return late.UTC()
	}
	return start.UTC()
}
