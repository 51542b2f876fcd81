// Package scmmetrics measures what a controller asks of its SCMs: calls by provider, operation
// and result with their latency, every HTTP answer on the wire (retries included), and the
// request budget of each shared rate limiter. Every controller that talks to an SCM uses it, so
// the series are named the same everywhere: sluice_scm_*.
package scmmetrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// ResultSuccess is the result label of a call that succeeded; failed calls are labelled with
// scm.KindOf(err).String(), such as rate_limited or unauthorized.
const ResultSuccess = "success"

// Operation names, as the operation label.
const (
	OpSetCommitStatus     = "set_commit_status"
	OpGetCommitStatus     = "get_commit_status"
	OpListCommitStatuses  = "list_commit_statuses"
	OpCreatePullRequest   = "create_pull_request"
	OpUpdatePullRequest   = "update_pull_request"
	OpFindOpenPullRequest = "find_open_pull_request"
	OpGetPullRequest      = "get_pull_request"
	OpMergePullRequest    = "merge_pull_request"
	OpClosePullRequest    = "close_pull_request"
)

// Metrics are the sluice_scm_* series. The provider label is the ScmProvider's namespace/name,
// the key its rate limiter is shared under; type is its provider type, such as github.
type Metrics struct {
	// Calls counts provider calls by provider, type, operation and result.
	Calls *prometheus.CounterVec
	// Duration times provider calls, waits for the rate limiter and retries included.
	Duration *prometheus.HistogramVec
	// Responses counts HTTP answers by provider and status code, one per attempt on the wire.
	Responses *prometheus.CounterVec
}

// New registers the metrics on reg, with gauges of every limiter in limiters (nil means
// ratelimit.Default).
func New(reg prometheus.Registerer, limiters *ratelimit.Registry) *Metrics {
	if limiters == nil {
		limiters = ratelimit.Default
	}
	m := &Metrics{
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_scm_calls_total",
			Help: "SCM provider calls by ScmProvider (namespace/name), provider type, operation and result (success, or the error kind such as rate_limited, unauthorized, transient).",
		}, []string{"provider", "type", "operation", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_scm_call_duration_seconds",
			Help:    "Duration of SCM provider calls, including waits for the shared rate limiter and retries.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"provider", "type", "operation"}),
		Responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_scm_http_responses_total",
			Help: "HTTP answers from SCMs by ScmProvider and status code, one per attempt (\"error\" when no answer arrived).",
		}, []string{"provider", "code"}),
	}
	reg.MustRegister(m.Calls, m.Duration, m.Responses, &limiterCollector{limiters: limiters})
	return m
}

// Observe records one call that started at start and ended with err.
func (m *Metrics) Observe(provider, typ, op string, start time.Time, err error) {
	result := ResultSuccess
	if err != nil {
		result = scm.KindOf(err).String()
	}
	m.Calls.WithLabelValues(provider, typ, op, result).Inc()
	m.Duration.WithLabelValues(provider, typ, op).Observe(time.Since(start).Seconds())
}

// WrapTransport returns a scm.Config.WrapTransport hook that counts every HTTP answer of the
// ScmProvider named provider.
func (m *Metrics) WrapTransport(provider string) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return roundTripper{base: base, responses: m.Responses, provider: provider}
	}
}

type roundTripper struct {
	base      http.RoundTripper
	responses *prometheus.CounterVec
	provider  string
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	r.responses.WithLabelValues(r.provider, code).Inc()
	return resp, err
}

// Forget drops the series of a deleted ScmProvider.
func (m *Metrics) Forget(provider string) {
	labels := prometheus.Labels{"provider": provider}
	m.Calls.DeletePartialMatch(labels)
	m.Duration.DeletePartialMatch(labels)
	m.Responses.DeletePartialMatch(labels)
}

// limiterCollector reads every shared limiter at scrape time, so the gauges are never stale and
// a forgotten limiter disappears with it.
type limiterCollector struct {
	limiters *ratelimit.Registry
}

var (
	remainingDesc = prometheus.NewDesc("sluice_scm_ratelimit_remaining",
		"Requests the SCM said it still accepts in the current window, from its rate-limit headers; absent until an answer carried them.",
		[]string{"provider"}, nil)
	limitDesc = prometheus.NewDesc("sluice_scm_ratelimit_limit",
		"Request budget of the SCM's current window, from its rate-limit headers.",
		[]string{"provider"}, nil)
	resetDesc = prometheus.NewDesc("sluice_scm_ratelimit_reset_timestamp_seconds",
		"When the SCM refills the budget, as Unix seconds, from its rate-limit headers.",
		[]string{"provider"}, nil)
	pausedDesc = prometheus.NewDesc("sluice_scm_ratelimit_paused_seconds",
		"Seconds until requests to this SCM resume; zero when not paused.",
		[]string{"provider"}, nil)
	throttledDesc = prometheus.NewDesc("sluice_scm_ratelimit_throttled_total",
		"Answers that told the client to stop (429 or a rate-limit 403).",
		[]string{"provider"}, nil)
	sentDesc = prometheus.NewDesc("sluice_scm_ratelimit_requests_total",
		"Requests the client-side limiter let through.",
		[]string{"provider"}, nil)
)

func (c *limiterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{remainingDesc, limitDesc, resetDesc, pausedDesc, throttledDesc, sentDesc} {
		ch <- d
	}
}

func (c *limiterCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	c.limiters.Each(func(key string, l *ratelimit.Limiter) {
		if q := l.Quota(); q.Known {
			ch <- prometheus.MustNewConstMetric(remainingDesc, prometheus.GaugeValue, float64(q.Remaining), key)
			ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(q.Limit), key)
			if !q.Reset.IsZero() {
				ch <- prometheus.MustNewConstMetric(resetDesc, prometheus.GaugeValue, float64(q.Reset.Unix()), key)
			}
		}
		paused := 0.0
		if until := l.PausedUntil(); !until.IsZero() {
			paused = until.Sub(now).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, max(paused, 0), key)
		ch <- prometheus.MustNewConstMetric(throttledDesc, prometheus.CounterValue, float64(l.Throttled()), key)
		ch <- prometheus.MustNewConstMetric(sentDesc, prometheus.CounterValue, float64(l.Requests()), key)
	})
}
