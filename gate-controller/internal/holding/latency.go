package holding

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/pkg/gate"
)

// Latency measures the time from a gate's transition to each target held or released because of
// it. The gate reconciler reports transitions with full precision (status times are in seconds);
// the gate's event handler marks the targets that must act; a target's reconcile ends the mark.
type Latency struct {
	mu          sync.Mutex
	transitions map[gate.Ref]time.Time
	pending     map[string]time.Time
}

// NewLatency returns an empty tracker.
func NewLatency() *Latency {
	return &Latency{transitions: map[gate.Ref]time.Time{}, pending: map[string]time.Time{}}
}

// Transitioned records that the gate's state changed at at.
func (l *Latency) Transitioned(ref gate.Ref, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.transitions[ref] = at
}

// Forget drops a deleted gate.
func (l *Latency) Forget(ref gate.Ref) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.transitions, ref)
}

// Mark records that the targets must act on the gate's latest transition, or on a change seen
// at fallback when the transition was not reported by this process.
func (l *Latency) Mark(ref gate.Ref, keys []string, fallback time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.transitions[ref]
	if !ok {
		at = fallback
	}
	for _, key := range keys {
		if prev, ok := l.pending[key]; !ok || at.Before(prev) {
			l.pending[key] = at
		}
	}
}

// Done forgets the target's pending transition and returns how long ago it happened, if one was
// pending.
func (l *Latency) Done(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.pending[key]
	delete(l.pending, key)
	return now.Sub(at), ok
}
