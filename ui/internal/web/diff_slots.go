package web

import (
	"context"
	"fmt"
	"net/http"
)

// diffSlots bounds the diffs read at once: each may hold gitdiff.Limits.FetchBytes of objects in
// memory, so the UI's memory is bounded by the slots, not by how many people open diffs.
var diffSlots = make(chan struct{}, 2)

// takeDiffSlot waits for a slot until ctx ends, and then says the UI is busy.
func takeDiffSlot(ctx context.Context) (release func(), err error) {
	select {
	case diffSlots <- struct{}{}:
		return func() { <-diffSlots }, nil
	case <-ctx.Done():
		return nil, &readRefusal{http.StatusServiceUnavailable,
			fmt.Sprintf("Busy: %d diffs are being read already and none ended in time. Try again in a moment.", cap(diffSlots))}
	}
}
