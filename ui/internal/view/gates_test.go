package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, "Fri 27 Nov 15:00", w.Segments[1].Start)
	assert.Equal(t, "Mon 30 Nov 08:00", w.Segments[1].End)
	assert.False(t, w.Segments[1].Beyond, "the freeze ends within the week")
	assert.True(t, w.Segments[2].Beyond, "the last stretch goes on past the timeline")
	assert.Equal(t, "Mon 23 Nov 10:00", w.Now)
	require.Len(t, w.Days, 7, "a midnight each day of the week")
	assert.InDelta(t, 14.0/168*100, w.Days[0].Percent, 1e-9, "the first midnight is 14h after Monday 10:00")
	assert.Equal(t, "Tue 24 Nov", w.Days[0].Label)
	assert.Equal(t, "Mon 30 Nov", w.Days[6].Label)
	assert.InDelta(t, 100, total, 0.001, "the segments cover the week")
}

func TestGateWeekOfAGateClosedByHandIsOneSegment(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	w := GateWeek(gatingv1alpha1.GateSpec{Closed: true}, now)
	assert.Equal(t, []Segment{{Open: false, Start: "Mon 23 Nov 10:00", End: "Mon 30 Nov 10:00", Percent: 100, Beyond: true}}, w.Segments,
		"closed from now to past the end of the week, never \"Mon 10:00 to Mon 10:00\"")
	assert.Empty(t, w.Next, "nothing changes this week")
}
