package soak

import (
	"sync"
	"time"
)

// gateLog records when a person closed and opened one strategy's prod gate.
type gateLog struct {
	mu          sync.Mutex
	closedSince time.Time
	closed      []interval
	// approved are the dry SHAs a person let through the closed gate (spec.approvals).
	approved map[string]bool
}

type interval struct{ from, to time.Time }

func (g *gateLog) open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closedSince.IsZero()
}

// approve records a dry SHA let through while the gate is closed.
func (g *gateLog) approve(dry string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.approved == nil {
		g.approved = map[string]bool{}
	}
	g.approved[dry] = true
}

// wasApproved: a person approved dry at some time; a merge of it through the closed gate is
// what the approval asked for.
func (g *gateLog) wasApproved(dry string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.approved[dry]
}

func (g *gateLog) close(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closedSince.IsZero() {
		g.closedSince = at
	}
}

func (g *gateLog) reopen(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closedSince.IsZero() {
		g.closed = append(g.closed, interval{g.closedSince, at})
		g.closedSince = time.Time{}
	}
}

// heldThroughout reports whether the gate was closed, for longer than grace already, over the
// whole of [from, to]: a merge that landed in that window merged through a closed gate.
func (g *gateLog) heldThroughout(from, to time.Time, grace time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	within := func(i interval) bool { return !i.from.Add(grace).After(from) && !i.to.Before(to) }
	for _, i := range g.closed {
		if within(i) {
			return true
		}
	}
	return !g.closedSince.IsZero() && within(interval{g.closedSince, to})
}

// undoList runs the people's undos (open the gate again, resume) when they are due, and all of
// them at once when the workload stops.
type undoList struct {
	mu      sync.Mutex
	pending []undo
}

type undo struct {
	at time.Time
	fn func()
}

func (u *undoList) add(d time.Duration, fn func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pending = append(u.pending, undo{time.Now().Add(d), fn})
}

// runDue runs the undos due by now, or every one with all.
func (u *undoList) runDue(all bool) {
	u.mu.Lock()
	var due []undo
	keep := u.pending[:0]
	for _, p := range u.pending {
		if all || !p.at.After(time.Now()) {
			due = append(due, p)
		} else {
			keep = append(keep, p)
		}
	}
	u.pending = keep
	u.mu.Unlock()
	for _, p := range due {
		p.fn()
	}
}
