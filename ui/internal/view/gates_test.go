package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

func TestGateWeekFollowsTheWindowsInTheirZone(t *testing.T) {
	// Monday 2026-11-23 10:00 in Berlin; closed every Friday from 15:00 for 65h (till Monday 08:00).
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database")
	}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, berlin)
	spec := gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{{
		Schedule: "0 15 * * 5", Duration: metav1.Duration{Duration: 65 * time.Hour}, TimeZone: "Europe/Berlin", Kind: gatingv1alpha1.StateClosed,
	}}}
	w := GateWeek(spec, now)
	assert.Equal(t, "Europe/Berlin", w.Zone)
	assert.Equal(t, "closes in 4 days", w.Next)
	var states []bool
	var total float64
	for _, s := range w.Segments {
		states = append(states, s.Open)
		total += s.Percent
	}
	assert.Equal(t, []bool{true, false, true}, states, "open until Friday, closed over the weekend, open again Monday")
	assert.Equal(t, "Fri 15:00", w.Segments[1].Start)
	assert.Equal(t, "Mon 08:00", w.Segments[1].End)
	assert.InDelta(t, 100, total, 0.001, "the segments cover the week")
}

func TestGateWeekOfAGateClosedByHandIsOneSegment(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	w := GateWeek(gatingv1alpha1.GateSpec{Closed: true}, now)
	assert.Equal(t, []Segment{{Open: false, Start: "Mon 10:00", End: "Mon 10:00", Percent: 100}}, w.Segments)
	assert.Empty(t, w.Next, "nothing changes this week")
}
