package soak

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Report is what a soak run found.
type Report struct {
	Config     Config
	Faults     map[FaultKind]int
	Recoveries []time.Duration
	Ops        map[string]int64
	Checks     map[int]int
	Violations []Violation
	// Context holds the events around each violation.
	Context                 map[string][]string
	ConvergedIn             time.Duration
	APICallsPerSecondAtRest float64
	GitRequestsAtRest       int64
	Controllers             []ControllerFigures
}

// ControllerFigures are one replica's restarts, memory and CPU, and the slopes of its longest
// incarnation.
type ControllerFigures struct {
	Replica               string
	Restarts, Exits       int
	MaxRSSMiB, CPUSeconds float64
	RSSSlopeMiBPerMin     float64
	GoroutineSlopePerMin  float64
	LongestIncarnationMin float64
}

func (r *soakRun) finishReport() {
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	rep := r.report
	if r.w == nil || r.fleet == nil {
		return
	}
	o := r.w.ops
	rep.Ops = map[string]int64{
		"dry commits": o.dryCommits.Load(), "proposals": o.proposals.Load(), "health statuses": o.statuses.Load(),
		"gate closes": o.gateCloses.Load(), "gate opens": o.gateOpens.Load(), "suspends": o.suspends.Load(),
		"resumes": o.resumes.Load(), "approvals": o.approvals.Load(), "fixes forward during a revert": o.fixesDuringReverts.Load(),
		"release upgrades": o.releaseUpgrades.Load(), "release upgrades with failing tests": o.releaseFailingTests.Load(),
		"release upgrades naming an object not theirs": o.releaseForeign.Load(), "reverts by hand": o.manualReverts.Load(), "steps failed (faults)": o.failed.Load(),
	}
	rep.Checks, rep.Violations, rep.Context = r.check.result()
	for _, rp := range r.fleet.replicas {
		rep.Controllers = append(rep.Controllers, figures(rp))
	}
}

func figures(rp *replica) ControllerFigures {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	f := ControllerFigures{Replica: rp.String(), Restarts: rp.restarts, Exits: rp.exits, CPUSeconds: rp.cpuEnded}
	var longest []sample
	for _, s := range rp.series {
		for _, x := range s {
			f.MaxRSSMiB = math.Max(f.MaxRSSMiB, x.rss/(1<<20))
		}
		if len(s) > len(longest) {
			longest = s
		}
	}
	if last := rp.series[len(rp.series)-1]; len(last) > 0 {
		f.CPUSeconds += last[len(last)-1].cpu
	}
	if len(longest) > 1 {
		f.LongestIncarnationMin = longest[len(longest)-1].at.Sub(longest[0].at).Minutes()
		f.RSSSlopeMiBPerMin = Slope(longest, func(s sample) float64 { return s.rss / (1 << 20) })
		f.GoroutineSlopePerMin = Slope(longest, func(s sample) float64 { return s.goroutines })
	}
	return f
}

// Slope is the least-squares slope of value over time, per minute.
func Slope(samples []sample, value func(sample) float64) float64 {
	if len(samples) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	t0 := samples[0].at
	for _, s := range samples {
		x, y := s.at.Sub(t0).Minutes(), value(s)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(samples))
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// Percentile is the p-th percentile (0 to 100) of ds, nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Write prints the report as Markdown.
func (rep *Report) Write(w io.Writer) {
	c := rep.Config
	fmt.Fprintf(w, "## Soak: seed %d, %s, %d strategies\n\n", c.Seed, c.Duration, c.Strategies)
	fmt.Fprintf(w, "Replay: `SOAK_SEED=%d SOAK_DURATION=%s SOAK_STRATEGIES=%d make soak`\n\n", c.Seed, c.Duration, c.Strategies)
	fmt.Fprintf(w, "| fault | injected |\n|---|---|\n")
	for _, k := range sortedKeys(rep.Faults) {
		fmt.Fprintf(w, "| %s | %d |\n", k, rep.Faults[FaultKind(k)])
	}
	fmt.Fprintf(w, "\nRecovery after a fault (every controller leading again): p50 %s, p99 %s, over %d faults.\n\n",
		Percentile(rep.Recoveries, 50).Round(100*time.Millisecond), Percentile(rep.Recoveries, 99).Round(100*time.Millisecond), len(rep.Recoveries))
	fmt.Fprintf(w, "| operation | count |\n|---|---|\n")
	for _, k := range sortedKeys(rep.Ops) {
		fmt.Fprintf(w, "| %s | %d |\n", k, rep.Ops[k])
	}
	fmt.Fprintf(w, "\n| invariant | checks | violations |\n|---|---|---|\n")
	for _, inv := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9} {
		n := 0
		for _, v := range rep.Violations {
			if v.Invariant == inv {
				n++
			}
		}
		fmt.Fprintf(w, "| %d. %s | %d | %d |\n", inv, invariantNames[inv], rep.Checks[inv], n)
	}
	fmt.Fprintf(w, "\nConverged %s after the faults; at rest %.2f API requests a second (all %d replicas), %d git requests in %s.\n\n",
		rep.ConvergedIn.Round(time.Second), rep.APICallsPerSecondAtRest, len(rep.Controllers), rep.GitRequestsAtRest, restWindow)
	fmt.Fprintf(w, "| replica | killed | exited | max RSS MiB | CPU s | RSS slope MiB/min | goroutines/min | over min |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range rep.Controllers {
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | %.1f | %+.3f | %+.2f | %.1f |\n", f.Replica, f.Restarts, f.Exits, f.MaxRSSMiB, f.CPUSeconds, f.RSSSlopeMiBPerMin, f.GoroutineSlopePerMin, f.LongestIncarnationMin)
	}
	for _, v := range rep.Violations {
		fmt.Fprintf(w, "\n**%s**\n\n```\n%s\n```\n", v, strings.Join(rep.Context[v.String()], "\n"))
	}
}

func sortedKeys[V any, K ~string](m map[K]V) []string {
	var out []string
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}
