package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// client-go reports its REST client and leader-election measurements through process-wide hooks
// that accept one provider per process. The collectors behind them are therefore process-wide too,
// and every Registry registers the same ones, under the names Kubernetes components and
// controller-runtime export: rest_client_* and leader_election_*.
var (
	clientGo         = newClientGoCollectors()
	registerClientGo sync.Once
)

type clientGoCollectors struct {
	requestLatency     *prometheus.HistogramVec
	rateLimiterLatency *prometheus.HistogramVec
	requests           *prometheus.CounterVec
	retries            *prometheus.CounterVec
	leader             *prometheus.GaugeVec
	slowpath           *prometheus.CounterVec
}

func newClientGoCollectors() *clientGoCollectors {
	latencyBuckets := []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	return &clientGoCollectors{
		requestLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_request_duration_seconds",
			Help:    "Latency of Kubernetes API requests, by verb and host.",
			Buckets: latencyBuckets,
		}, []string{"verb", "host"}),
		rateLimiterLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_rate_limiter_duration_seconds",
			Help:    "Time Kubernetes API requests waited for the client-side rate limiter (--kube-api-qps, --kube-api-burst), by verb and host.",
			Buckets: latencyBuckets,
		}, []string{"verb", "host"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rest_client_requests_total",
			Help: "Kubernetes API requests, by status code, method and host.",
		}, []string{"code", "method", "host"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rest_client_request_retries_total",
			Help: "Kubernetes API requests retried, by status code, verb and host.",
		}, []string{"code", "verb", "host"}),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "leader_election_master_status",
			Help: "1 while this process holds the leader-election Lease name, 0 while it stands by.",
		}, []string{"name"}),
		slowpath: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leader_election_slowpath_total",
			Help: "Lease renewals that needed the slow path (a get before the update), by Lease name.",
		}, []string{"name"}),
	}
}

func (c *clientGoCollectors) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.requestLatency, c.rateLimiterLatency, c.requests, c.retries, c.leader, c.slowpath}
}

// register hands the collectors to client-go once per process, and registers them on reg.
func (c *clientGoCollectors) register(reg prometheus.Registerer) {
	registerClientGo.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency:     latencyAdapter{c.requestLatency},
			RateLimiterLatency: latencyAdapter{c.rateLimiterLatency},
			RequestResult:      resultAdapter{c.requests},
			RequestRetry:       retryAdapter{c.retries},
		})
		leaderelection.SetProvider(leaderProvider{c})
	})
	reg.MustRegister(c.collectors()...)
}

type latencyAdapter struct{ vec *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.vec.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ vec *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.vec.WithLabelValues(code, method, host).Inc()
}

type retryAdapter struct{ vec *prometheus.CounterVec }

func (a retryAdapter) IncrementRetry(_ context.Context, code, method, host string) {
	a.vec.WithLabelValues(code, method, host).Inc()
}

type leaderProvider struct{ c *clientGoCollectors }

func (p leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetric(p) }

type leaderMetric struct{ c *clientGoCollectors }

func (m leaderMetric) On(name string)  { m.c.leader.WithLabelValues(name).Set(1) }
func (m leaderMetric) Off(name string) { m.c.leader.WithLabelValues(name).Set(0) }
func (m leaderMetric) SlowpathExercised(name string) {
	m.c.slowpath.WithLabelValues(name).Inc()
}
