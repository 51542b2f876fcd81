package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/ui/internal/store"
)

// keepAlive is how often an idle stream sends a comment, so proxies keep it open.
const keepAlive = 25 * time.Second

// events streams the changes, as server-sent events. A page opens it with ?watch= naming the
// keys of what it shows (its data-watch, pageKeys), and is told only the keys that changed; it
// fetches itself again then: the server pushes, the browser never polls. Without ?watch= it is
// told the kinds that changed. Only changes the person may see are told (store.Subscribe).
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
	s.Metrics.Streams.Inc()
	defer s.Metrics.Streams.Dec()
	w = countingWriter{ResponseWriter: w, sent: s.Metrics.StreamBytes}
	keys := streamKeys(r.URL.Query().Get("watch"))
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
			names := s.changed(keys, sub)
			if len(names) == 0 {
				continue // only changes this page does not show, or the person may not see
			}
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", strings.Join(names, ","))
		}
		flusher.Flush()
	}
}

// changed is what a stream is told of its pending changes: the keys among keys they concern,
// or without keys the kinds that changed.
func (s *Server) changed(keys []store.Key, sub *store.Subscription) []string {
	if len(keys) == 0 {
		return sub.Take()
	}
	return matching(keys, sub.TakeChanges())
}

// countingWriter counts the bytes written on a stream.
type countingWriter struct {
	http.ResponseWriter
	sent prometheus.Counter
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.sent.Add(float64(n))
	return n, err
}
