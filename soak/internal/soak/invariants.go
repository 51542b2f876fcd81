package soak

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// gateGrace is how long after a gate closes a merge may still land: the promoter decides
// from its cache, and a merge it started before it saw the gate finishes.
const gateGrace = 10 * time.Second

// invariantNames are the invariants of the soak, as docs/reliability.md states them.
var invariantNames = map[int]string{
	1:  "every promotion merged once",
	2:  "a branch moves back only by a revert",
	3:  "a fix forward is never overwritten",
	4:  "at most one revert in flight per environment",
	5:  "a reverted dry SHA is never promoted again",
	6:  "no merge into an environment while its gate is closed",
	7:  "every CommitStatus reaches the SCM with its last state",
	8:  "a ManifestRelease is one whole version and touches nothing it did not create",
	9:  "convergence after the faults",
	10: "no growth of RSS and goroutines",
}

// branchWatch follows one environment branch.
type branchWatch struct {
	strategy, env string
	reader        *branchReader
	tip           string
	seen          time.Time
}

// checker checks the invariants on what git and the cluster show, again and again.
type checker struct {
	// walking serializes the readers' use: a pass and a history check run from two loops, and a
	// branchReader (its open repository, its cache of dry SHAs) is not safe for concurrent use.
	walking  sync.Mutex
	w        *workload
	watches  []*branchWatch
	mu       sync.Mutex
	checks   map[int]int
	found    []Violation
	events   *eventLog
	reported map[string]bool
	context  map[string][]string
	// flux follows what Flux applied of the strategies it deploys.
	flux fluxChecks
}

func newChecker(w *workload, events *eventLog) *checker {
	c := &checker{w: w, checks: map[int]int{}, events: events, reported: map[string]bool{}, context: map[string][]string{}}
	for _, s := range w.strategy {
		for _, env := range environments {
			c.watches = append(c.watches, &branchWatch{strategy: s.name, env: env, reader: newBranchReader(s.dir)})
		}
		if s.flux {
			c.flux.watches = append(c.flux.watches, &appliedWatch{strategy: s.name})
		}
	}
	return c
}

func (c *checker) violate(v Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reported[v.String()] {
		return
	}
	c.reported[v.String()] = true
	c.found = append(c.found, v)
	c.events.add("VIOLATION " + v.String())
	// The events before it, kept now: the log keeps only the newest lines of a long run.
	c.context[v.String()] = c.events.last(20)
}

func (c *checker) count(inv, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks[inv] += n
}

// pass checks every branch's new moves and the reverts in flight once.
func (c *checker) pass(ctx context.Context) error {
	c.walking.Lock()
	defer c.walking.Unlock()
	now := time.Now()
	for _, bw := range c.watches {
		if err := c.follow(bw, now); err != nil {
			return fmt.Errorf("%s/%s: %w", bw.strategy, bw.env, err)
		}
	}
	if err := c.followApplied(ctx, now); err != nil {
		return err
	}
	if err := c.checkReleases(ctx); err != nil {
		return err
	}
	return c.revertsInFlight(ctx)
}

// follow reads a branch's tip; a move must go forward (invariant 2), and a promotion seen to
// land while the gate was closed breaks invariant 6.
func (c *checker) follow(bw *branchWatch, now time.Time) error {
	tip, err := bw.reader.tip(bw.env)
	if err != nil || tip == "" || tip == bw.tip {
		bw.seen = now
		return err
	}
	if bw.tip != "" {
		c.count(2, 1)
		ok, err := bw.reader.isAncestor(bw.tip, tip)
		if err != nil {
			return err
		}
		if !ok {
			c.violate(Violation{2, bw.strategy + "/" + bw.env, fmt.Sprintf("the branch was rewound from %s to %s", short(bw.tip), short(tip))})
		}
		if bw.env == "prod" {
			if err := c.gatedMove(bw, tip, now); err != nil {
				return err
			}
		}
	}
	c.events.add(fmt.Sprintf("%s/%s at %s", bw.strategy, bw.env, short(tip)))
	bw.tip, bw.seen = tip, now
	return nil
}

// gatedMove judges a move of prod by where it lands (invariant 6). A proposal merged through a
// closed gate, as an approval lets it, brings in the -next commits proposed before it; prod's
// history holds them, but prod never ran them, so they are not merges through the gate.
func (c *checker) gatedMove(bw *branchWatch, tip string, now time.Time) error {
	steps, err := bw.reader.steps(tip, bw.tip)
	if err != nil || len(steps) == 0 {
		return err
	}
	c.count(6, 1)
	landed, before := steps[len(steps)-1], steps[0].ParentDry
	g := c.w.gateOf(bw.strategy)
	if landed.Revert == "" && landed.Dry != before && !g.wasApproved(landed.Dry) && g.heldThroughout(bw.seen, now, gateGrace) {
		c.violate(Violation{6, bw.strategy + "/prod", fmt.Sprintf("%s (dry %s) merged while the gate was closed", short(landed.SHA), short(landed.Dry))})
	}
	return nil
}

// revertsInFlight: at most one RevertCommit started and in flight per environment (invariant 4),
// judged on one List, a consistent snapshot: reading each one again would mix moments, and a
// revert that merged in between would count as in flight beside the next one.
func (c *checker) revertsInFlight(ctx context.Context) error {
	list, err := c.w.sluice.RollbackV1alpha1().RevertCommits(c.w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	started, environments := startedReverts(list.Items)
	c.count(4, environments)
	for key, names := range started {
		if len(names) > 1 {
			c.violate(Violation{4, key, fmt.Sprintf("%d reverts in flight: %v", len(names), names)})
		}
	}
	return nil
}

// startedReverts gives, per strategy/environment, the RevertCommits in flight (Pending, Open or
// not yet seen) that wrote a revert commit or opened a pull request: one waiting its turn, with
// nothing written, is not in flight. environments counts the environments with any in flight.
func startedReverts(items []rollbackv1.RevertCommit) (map[string][]string, int) {
	started := map[string][]string{}
	any := map[string]bool{}
	for _, rc := range items {
		p := rc.Status.Phase
		if p != rollbackv1.RevertPending && p != rollbackv1.RevertOpen && p != "" {
			continue
		}
		key := rc.Spec.PromotionStrategyRef.Name + "/" + rc.Spec.ActiveBranch
		any[key] = true
		if rc.Status.RevertSHA != "" || p == rollbackv1.RevertOpen {
			started[key] = append(started[key], rc.Name)
		}
	}
	return started, len(any)
}

// histories checks every branch's whole history (invariants 1, 2, 3 and 5).
func (c *checker) histories() error {
	c.walking.Lock()
	defer c.walking.Unlock()
	for _, bw := range c.watches {
		tip, err := bw.reader.tip(bw.env)
		if err != nil || tip == "" {
			return err
		}
		// The order of the dry commits is read after the tip: the hydrator records a dry commit
		// before it proposes it, so every one the tip holds is known. Read before, a dry commit
		// made during the walk of the branches looked like one older than them all.
		seq := c.w.seqs()
		steps, err := bw.reader.steps(tip, "")
		if err != nil {
			return err
		}
		for _, inv := range []int{1, 2, 3, 5} {
			c.count(inv, len(steps))
		}
		for _, v := range CheckHistory(bw.strategy+"/"+bw.env, steps, seq) {
			c.violate(v)
		}
	}
	return nil
}

func (c *checker) result() (map[int]int, []Violation, map[string][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	checks := map[int]int{}
	for k, v := range c.checks {
		checks[k] = v
	}
	context := map[string][]string{}
	for k, v := range c.context {
		context[k] = v
	}
	return checks, append([]Violation(nil), c.found...), context
}

// eventLog keeps the recent events, printed around a violation.
type eventLog struct {
	mu    sync.Mutex
	start time.Time
	lines []string
}

func (e *eventLog) add(line string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, fmt.Sprintf("+%7.1fs %s", time.Since(e.start).Seconds(), line))
	if len(e.lines) > 5000 {
		e.lines = e.lines[len(e.lines)-4000:]
	}
}

// last returns the newest n events.
func (e *eventLog) last(n int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.lines[max(0, len(e.lines)-n):]...)
}
