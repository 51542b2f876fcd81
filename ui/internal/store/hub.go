package store

import (
	"slices"
	"sync"
)

// AnyKind is the change that concerns every page: a CRD came or went.
const AnyKind = "*"

// Hub tells each subscriber which kinds changed since it last looked. A subscriber that is slow
// (a browser on a poor link) never blocks the informers: its changes are merged into one set
// until it reads them, so a burst of writes costs it one update.
type Hub struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscription is one subscriber's pending changes.
type Subscription struct {
	// Ready receives a value when changes are pending.
	Ready   chan struct{}
	pending map[string]struct{}
	hub     *Hub
}

// NewHub returns a hub with no subscribers.
func NewHub() *Hub { return &Hub{subs: map[*Subscription]struct{}{}} }

// Subscribe adds a subscriber; call Close when done.
func (h *Hub) Subscribe() *Subscription {
	s := &Subscription{Ready: make(chan struct{}, 1), pending: map[string]struct{}{}, hub: h}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Subscribers is the number of subscribers.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Notify records that kind changed, for every subscriber.
func (h *Hub) Notify(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.pending[kind] = struct{}{}
		select {
		case s.Ready <- struct{}{}:
		default:
		}
	}
}

// Take returns the kinds changed since the last Take, sorted, and forgets them.
func (s *Subscription) Take() []string {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	out := make([]string, 0, len(s.pending))
	for k := range s.pending {
		out = append(out, k)
	}
	clear(s.pending)
	slices.Sort(out)
	return out
}

// Close removes the subscriber.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	delete(s.hub.subs, s)
	s.hub.mu.Unlock()
}
