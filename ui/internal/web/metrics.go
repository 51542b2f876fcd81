package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the UI's own sluice_ui_* metrics, served with the process's others on the
// metrics address (--metrics-bind-address), never on the pages' listener.
type Metrics struct {
	// Requests counts requests by route pattern (as the mux matched it) and status code.
	Requests *prometheus.CounterVec
	// Duration times requests by route pattern; the event stream is left out (it lasts as long
	// as a page is open).
	Duration *prometheus.HistogramVec
	// Streams is how many event streams are open.
	Streams prometheus.Gauge
	// Renders counts pages rendered, by page.
	Renders *prometheus.CounterVec
	// StreamBytes counts the bytes sent on event streams.
	StreamBytes prometheus.Counter
}

// NewMetrics registers the UI's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_ui_requests_total",
			Help: "HTTP requests to the UI, by route pattern and status code.",
		}, []string{"route", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_ui_request_duration_seconds",
			Help:    "Time to serve a UI request, by route pattern; the event stream is not timed.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"route"}),
		Streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_ui_streams_open",
			Help: "Event streams open: one per live page.",
		}),
		Renders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_ui_renders_total",
			Help: "Pages rendered, by page (a live update renders its page again).",
		}, []string{"page"}),
		StreamBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_ui_stream_bytes_total",
			Help: "Bytes sent on event streams.",
		}),
	}
	reg.MustRegister(m.Requests, m.Duration, m.Streams, m.Renders, m.StreamBytes)
	return m
}

// streamRoute is the event stream's pattern, which Duration leaves out.
const streamRoute = "GET /events"

// measure counts and times each request that next serves by the pattern mux routes it with,
// those next refuses (no launch token) too. Every page's render count starts at zero, so a rate
// of it is there from the start.
func (s *Server) measure(mux *http.ServeMux, next http.Handler) http.Handler {
	for name := range s.pages {
		s.Metrics.Renders.WithLabelValues(name)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, route := mux.Handler(r)
		if route == "" {
			route = "unmatched"
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.Metrics.Requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
		if route != streamRoute {
			s.Metrics.Duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}
	})
}

// statusRecorder remembers the status code written; it flushes, for the event stream.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
