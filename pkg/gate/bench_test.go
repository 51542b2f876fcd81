package gate

import (
	"fmt"
	"testing"
	"time"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// benchmarkWindows returns n windows of mixed kinds, schedules and zones.
func benchmarkWindows(n int) []gatingv1alpha1.GateWindow {
	zones := []string{london, newYork, "Asia/Tokyo", "Australia/Sydney"}
	windows := make([]gatingv1alpha1.GateWindow, n)
	for i := range windows {
		kind := gatingv1alpha1.StateOpen
		if i%3 == 2 {
			kind = gatingv1alpha1.StateClosed
		}
		schedule := fmt.Sprintf("%d %d * * 1-5", (i*7)%60, (i*5)%24)
		windows[i] = windowSpec(schedule, zones[i%len(zones)], time.Duration(1+i%4)*time.Hour, kind)
	}
	return windows
}

// BenchmarkEvaluate measures Evaluate as the number of windows grows; windows=1 is the baseline.
func BenchmarkEvaluate(b *testing.B) {
	now := time.Date(2025, 3, 7, 17, 0, 0, 0, time.UTC)
	for _, n := range []int{1, 8, 32} {
		spec := gatingv1alpha1.GateSpec{Windows: benchmarkWindows(n)}
		if err := ValidateSpec(spec); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("windows=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Evaluate(spec, now)
			}
		})
	}
}
