package view

import (
	"fmt"
	"time"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
)

// Week is a gate's state over the next seven days, as the gate-controller will decide it: its
// windows, overrides and manual state, evaluated by the same code (pkg/gate).
type Week struct {
	Segments []Segment
	// Zone is the time zone the labels are in: the first window's, else UTC.
	Zone string
	// Next says when the state changes next, as "closes in 2h 5m", or "" when it does not this week.
	Next string
	// Now is when the week starts, written in Zone, for the "now" marker.
	Now string
	// Days mark each midnight of the week in Zone, for the timeline's ticks.
	Days []DayTick
}

// DayTick is a midnight on the timeline.
type DayTick struct {
	// Percent is where it falls, from the week's start.
	Percent float64
	// Label is the day it starts, as "Tue 24 Nov".
	Label string
}

// Segment is a stretch of the week with one state.
type Segment struct {
	Open bool
	// Start and End are the stretch's bounds, written in Zone.
	Start, End string
	// Percent is the stretch's share of the week, for drawing.
	Percent float64
	// Beyond is set when the stretch lasts past the seven days drawn: End is then only where
	// the timeline stops, not a change.
	Beyond bool
}

// weekSteps bounds the evaluations of one week: a window every minute would otherwise draw
// ten thousand segments no one can read.
const weekSteps = 200

// GateWeek evaluates spec from now for seven days.
func GateWeek(spec gatingv1alpha1.GateSpec, now time.Time) Week {
	loc := time.UTC
	for _, w := range spec.Windows {
		if w.TimeZone != "" {
			if l, err := time.LoadLocation(w.TimeZone); err == nil {
				loc = l
			}
			break
		}
	}
	end := now.Add(7 * 24 * time.Hour)
	out := Week{Zone: loc.String(), Now: label(now, loc), Days: dayTicks(now, end, loc)}
	at := now
	for step := 0; at.Before(end) && step < weekSteps; step++ {
		d := gate.Evaluate(spec, at)
		until := end
		if d.NextTransition != nil && d.NextTransition.Before(end) && d.NextTransition.After(at) {
			until = *d.NextTransition
		}
		if step == 0 && until.Before(end) {
			verb := "opens"
			if d.Open {
				verb = "closes"
			}
			out.Next = fmt.Sprintf("%s %s", verb, Until(until, now))
		}
		if n := len(out.Segments); n > 0 && out.Segments[n-1].Open == d.Open {
			out.Segments[n-1].End = label(until, loc)
			out.Segments[n-1].Percent += share(at, until)
		} else {
			out.Segments = append(out.Segments, Segment{Open: d.Open, Start: label(at, loc), End: label(until, loc), Percent: share(at, until)})
		}
		at = until
	}
	if n := len(out.Segments); n > 0 {
		out.Segments[n-1].Beyond = true
	}
	return out
}

// label writes t with its date, so a week's labels never repeat: "Fri 27 Nov 15:00".
func label(t time.Time, loc *time.Location) string { return t.In(loc).Format("Mon 2 Jan 15:04") }

// dayTicks are the midnights in loc after from and before to.
func dayTicks(from, to time.Time, loc *time.Location) []DayTick {
	var out []DayTick
	f := from.In(loc)
	for day := time.Date(f.Year(), f.Month(), f.Day()+1, 0, 0, 0, 0, loc); day.Before(to); day = time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, loc) {
		out = append(out, DayTick{Percent: share(from, day), Label: day.Format("Mon 2 Jan")})
	}
	return out
}

func share(from, to time.Time) float64 {
	return float64(to.Sub(from)) / float64(7*24*time.Hour) * 100
}
