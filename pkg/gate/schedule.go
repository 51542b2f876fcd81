package gate

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cron's own Next works on instants, so around daylight-saving changes it repeats or drops starts.
// Only its parser is used here; the schedule is then walked on wall times (see zone.go).

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is how the cron parser marks a field written as "*" or "?"; it decides whether
// day-of-month and day-of-week must both match or either may.
const starBit = 1 << 63

const day = 24 * time.Hour

// searchDays bounds every walk over calendar days. Nine years covers the longest gap between
// two matches of a satisfiable schedule: Feb 29 skips 2100, so 2096 to 2104.
const searchDays = 9 * 366

// schedule is a parsed cron expression, read as local clock times.
type schedule struct {
	dom, month, dow uint64
	bothDays        bool            // day-of-month and day-of-week both restricted: either may match
	everyDay        bool            // every calendar day matches
	starts          []time.Duration // times of day of every start on a matching day, ascending
}

func parseSchedule(expr string) (*schedule, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, errors.New("schedule is empty; write five fields: minute hour day-of-month month day-of-week, e.g. \"0 18 * * FRI\"")
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, errors.New("a time zone prefix is not allowed in the schedule; put the zone in timeZone")
	case strings.HasPrefix(expr, "@every"):
		return nil, errors.New("@every is not a calendar schedule; write five cron fields, e.g. \"0 */2 * * *\" for every two hours")
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%v; write five fields: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or JAN-DEC) day-of-week (0-6 or SUN-SAT, Sunday is 0)", err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, errors.New("not a calendar schedule; write five cron fields")
	}
	s := &schedule{
		dom:      spec.Dom,
		month:    spec.Month,
		dow:      spec.Dow,
		bothDays: spec.Dom&starBit == 0 && spec.Dow&starBit == 0,
	}
	for h := range 24 {
		if spec.Hour&(1<<h) == 0 {
			continue
		}
		for m := range 60 {
			if spec.Minute&(1<<m) != 0 {
				s.starts = append(s.starts, time.Duration(h)*time.Hour+time.Duration(m)*time.Minute)
			}
		}
	}
	domAll, dowAll := s.dom&0xfffffffe == 0xfffffffe, s.dow&0x7f == 0x7f
	s.everyDay = s.month&0x1ffe == 0x1ffe && (domAll && dowAll || s.bothDays && (domAll || dowAll))
	if len(s.starts) == 0 || !s.anyDayCanMatch() {
		return nil, errors.New("the schedule never matches a real date (e.g. the 30th of February); check day-of-month and month")
	}
	return s, nil
}

// anyDayCanMatch rules out schedules such as "0 0 31 4 *" that name no real day.
func (s *schedule) anyDayCanMatch() bool {
	if s.dow&starBit == 0 {
		// A weekday is named, and every month has every weekday.
		return true
	}
	longest := [...]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) != 0 && s.dom&(uint64(1)<<(longest[m]+1)-2) != 0 {
			return true
		}
	}
	return false
}

func (s *schedule) matchesDay(d time.Time) bool {
	domOK := s.dom&(1<<d.Day()) != 0
	dowOK := s.dow&(1<<int(d.Weekday())) != 0
	if s.bothDays {
		return domOK || dowOK
	}
	return domOK && dowOK
}

func (s *schedule) matchesMonth(d time.Time) bool {
	return s.month&(1<<int(d.Month())) != 0
}

func midnight(w time.Time) time.Time {
	y, m, d := w.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// latestStart is the last start at or before w and after floor, with its index in starts.
func (s *schedule) latestStart(w, floor time.Time) (time.Time, int, bool) {
	d := midnight(w)
	limit := w.Sub(d)
	for range searchDays {
		if d.Add(day).Before(floor) || d.Add(day).Equal(floor) {
			return time.Time{}, 0, false
		}
		if !s.matchesMonth(d) {
			d = time.Date(d.Year(), d.Month(), 0, 0, 0, 0, 0, time.UTC) // last day of the month before
			limit = day
			continue
		}
		if s.matchesDay(d) {
			i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > limit }) - 1
			if i >= 0 {
				start := d.Add(s.starts[i])
				if !start.After(floor) {
					return time.Time{}, 0, false
				}
				return start, i, true
			}
		}
		d = d.AddDate(0, 0, -1)
		limit = day
	}
	return time.Time{}, 0, false
}

// nextStart is the first start strictly after w and not after limit.
func (s *schedule) nextStart(w, limit time.Time) (time.Time, bool) {
	d := midnight(w)
	after := w.Sub(d)
	for range searchDays {
		if d.After(limit) {
			return time.Time{}, false
		}
		if !s.matchesMonth(d) {
			d = time.Date(d.Year(), d.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			after = -1
			continue
		}
		if s.matchesDay(d) {
			i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > after })
			if i < len(s.starts) {
				start := d.Add(s.starts[i])
				if start.After(limit) {
					return time.Time{}, false
				}
				return start, true
			}
		}
		d = d.AddDate(0, 0, 1)
		after = -1
	}
	return time.Time{}, false
}
