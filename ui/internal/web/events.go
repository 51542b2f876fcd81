package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// keepAlive is how often an idle stream sends a comment, so proxies keep it open.
const keepAlive = 25 * time.Second

// events streams the kinds that changed, as server-sent events. The page fetches itself again
// when a kind it shows is named: the server pushes, the browser never polls. Only changes in
// namespaces where the person may list the kind are told (store.Subscribe).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	sub := s.Store.Subscribe()
	defer sub.Close()
	fmt.Fprint(w, "retry: 2000\nevent: ready\ndata: ok\n\n")
	flusher.Flush()
	ticker := time.NewTicker(keepAlive)
	defer ticker.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ticker.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case <-sub.Ready:
			kinds := sub.Take()
			if len(kinds) == 0 {
				continue // only changes the person may not see
			}
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", strings.Join(kinds, ","))
		}
		flusher.Flush()
	}
}
