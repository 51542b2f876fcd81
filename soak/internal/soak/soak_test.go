package soak

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScheduleReplaysFromItsSeedAndKeepsTheQuietEnd(t *testing.T) {
	a := Schedule(42, 30*time.Minute, 30*time.Second, 2*time.Minute, 20*time.Second, 10, false)
	b := Schedule(42, 30*time.Minute, 30*time.Second, 2*time.Minute, 20*time.Second, 10, false)
	c := Schedule(43, 30*time.Minute, 30*time.Second, 2*time.Minute, 20*time.Second, 10, false)
	require.NotEmpty(t, a)
	assert.Equal(t, a, b, "a seed replays its schedule")
	assert.NotEqual(t, a, c)
	kinds := map[FaultKind]bool{}
	for i, f := range a {
		kinds[f.Kind] = true
		assert.GreaterOrEqual(t, f.At, 30*time.Second, "no fault in the warm-up")
		assert.LessOrEqual(t, f.At+f.Length, 28*time.Minute, "none in the quiet end")
		if i > 0 {
			assert.GreaterOrEqual(t, f.At, a[i-1].At+a[i-1].Length, "faults do not overlap")
		}
		assert.Less(t, f.Target, 10)
	}
	assert.Len(t, kinds, len(map[FaultKind]bool{KillReplica: true, DropAPIConnections: true, StallAPI: true, RestartAPIServer: true, PauseEtcd: true, RefuseGitPushes: true, SlowGit: true}),
		"thirty minutes draw every kind")
}

func TestCheckHistory(t *testing.T) {
	seq := map[string]int{"d1": 1, "d2": 2, "d3": 3, "d4": 4}
	promote := func(sha, from, to string) Step { return Step{SHA: sha, Dry: to, ParentDry: from} }
	revert := func(sha, from, to, bad string) Step {
		return Step{SHA: sha, Dry: to, ParentDry: from, Revert: "soak/r", RevertedDry: bad}
	}
	for _, tc := range []struct {
		name  string
		steps []Step
		want  []int
	}{
		{"promotions forward", []Step{promote("a", "d0", "d1"), promote("b", "d1", "d3")}, nil},
		{"a revert back, then a fix forward", []Step{promote("a", "d0", "d2"), promote("b", "d2", "d3"), revert("c", "d3", "d2", "d3"), promote("d", "d2", "d4")}, nil},
		{"promoted twice", []Step{promote("a", "d0", "d1"), promote("b", "d1", "d2"), promote("c", "d2", "d1")}, []int{1, 2}},
		{"back without a revert", []Step{promote("a", "d0", "d3"), promote("b", "d3", "d2")}, []int{2}},
		{"a revert over a fix forward", []Step{promote("a", "d0", "d2"), promote("b", "d2", "d4"), revert("c", "d4", "d1", "d2")}, []int{3}},
		{"a reverted dry promoted again", []Step{promote("a", "d0", "d2"), revert("b", "d2", "d1", "d2"), Step{SHA: "c", Dry: "d2", ParentDry: "d1"}}, []int{1, 5}},
		{"a step that keeps its dry SHA is no promotion", []Step{promote("a", "d0", "d1"), promote("b", "d1", "d1")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, v := range CheckHistory("app/prod", tc.steps, seq) {
				got = append(got, v.Invariant)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGateLogHeldThroughout(t *testing.T) {
	t0 := time.Now()
	g := &gateLog{}
	g.close(t0)
	g.reopen(t0.Add(time.Minute))
	assert.True(t, g.heldThroughout(t0.Add(20*time.Second), t0.Add(22*time.Second), 10*time.Second))
	assert.False(t, g.heldThroughout(t0.Add(5*time.Second), t0.Add(7*time.Second), 10*time.Second), "within the grace a merge may land")
	assert.False(t, g.heldThroughout(t0.Add(59*time.Second), t0.Add(61*time.Second), 10*time.Second), "open again by the end of the window")
	g.close(t0.Add(2 * time.Minute))
	assert.True(t, g.heldThroughout(t0.Add(3*time.Minute), t0.Add(3*time.Minute+time.Second), 10*time.Second), "closed still")
	assert.False(t, g.open())
	assert.False(t, g.wasApproved("d1"))
	g.approve("d1")
	assert.True(t, g.wasApproved("d1"), "an approved dry SHA may pass the closed gate")
	assert.False(t, g.wasApproved("d2"), "and no other")
}

func TestMetricLineSlopeAndPercentile(t *testing.T) {
	name, v, ok := metricLine(`workqueue_depth{name="promotionstrategies"} 3`)
	require.True(t, ok)
	assert.Equal(t, "workqueue_depth", name)
	assert.Equal(t, 3.0, v)
	_, _, ok = metricLine("garbage")
	assert.False(t, ok)

	t0 := time.Now()
	var rising []sample
	for i := 0; i < 10; i++ {
		rising = append(rising, sample{at: t0.Add(time.Duration(i) * time.Minute), rss: float64(i * 2)})
	}
	assert.InDelta(t, 2.0, Slope(rising, func(s sample) float64 { return s.rss }), 1e-9)
	assert.Equal(t, 0.0, Slope(rising[:1], func(s sample) float64 { return s.rss }))

	ds := []time.Duration{5, 1, 3, 2, 4}
	assert.Equal(t, time.Duration(3), Percentile(ds, 50))
	assert.Equal(t, time.Duration(5), Percentile(ds, 99))
}
