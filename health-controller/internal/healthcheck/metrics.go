package healthcheck

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// states are the values of the state label, one series each per HealthCheck, exactly one at 1.
var states = []string{
	string(Healthy), string(Soaking), string(Progressing), string(NoTargets),
	string(Failed), string(TimedOut), stateWaiting, stateStalled, stateSuspended,
}

var resourceStatuses = []healthv1alpha1.ResourceStatus{
	healthv1alpha1.StatusCurrent, healthv1alpha1.StatusInProgress, healthv1alpha1.StatusFailed,
	healthv1alpha1.StatusUnknown, healthv1alpha1.StatusNotFound,
}

// Metrics are the health-controller's domain metrics.
type Metrics struct {
	State     *prometheus.GaugeVec
	Resources *prometheus.GaugeVec
	Duration  prometheus.Histogram
	CELErrors *prometheus.CounterVec
}

// NewMetrics registers the domain metrics, including the watch sizes read from w at scrape time.
func NewMetrics(reg prometheus.Registerer, w statsReader) (*Metrics, error) {
	m := &Metrics{
		State: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_health_check_state",
			Help: "State of each HealthCheck: 1 for the current state, 0 for the others.",
		}, []string{"namespace", "name", "state"}),
		Resources: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_health_check_resources",
			Help: "Target objects of each HealthCheck by health status.",
		}, []string{"namespace", "name", "status"}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_health_evaluation_duration_seconds",
			Help:    "Time to compute the health of every target of one HealthCheck, from the watch caches.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 12),
		}),
		CELErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_health_cel_errors_total",
			Help: "CEL errors: phase=compile for invalid expressions (HealthCheck Stalled), phase=evaluation for objects made Unknown.",
		}, []string{"phase"}),
	}
	for _, c := range []prometheus.Collector{m.State, m.Resources, m.Duration, m.CELErrors, &watchCollector{w: w}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.CELErrors.WithLabelValues("compile")
	m.CELErrors.WithLabelValues("evaluation")
	return m, nil
}

func (m *Metrics) setState(hc *healthv1alpha1.HealthCheck, state string) {
	for _, s := range states {
		v := 0.0
		if s == state {
			v = 1
		}
		m.State.WithLabelValues(hc.Namespace, hc.Name, s).Set(v)
	}
}

func (m *Metrics) setCounts(hc *healthv1alpha1.HealthCheck, c healthv1alpha1.HealthCounts) {
	n := map[healthv1alpha1.ResourceStatus]int32{
		healthv1alpha1.StatusCurrent: c.Current, healthv1alpha1.StatusInProgress: c.InProgress, healthv1alpha1.StatusFailed: c.Failed,
		healthv1alpha1.StatusUnknown: c.Unknown, healthv1alpha1.StatusNotFound: c.NotFound,
	}
	for _, s := range resourceStatuses {
		m.Resources.WithLabelValues(hc.Namespace, hc.Name, string(s)).Set(float64(n[s]))
	}
}

func (m *Metrics) forget(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	m.State.DeletePartialMatch(labels)
	m.Resources.DeletePartialMatch(labels)
}

var (
	watchedObjectsDesc = prometheus.NewDesc("sluice_health_watched_objects",
		"Objects held in the watch caches, by resource (summed over namespaces).", []string{"group", "version", "resource"}, nil)
	watchesDesc = prometheus.NewDesc("sluice_health_watches",
		"Running watches; one per resource and namespace that some HealthCheck reads.", nil, nil)
)

// watchCollector reads the watch sizes when scraped, so they are never stale.
type watchCollector struct{ w statsReader }

// statsReader reports the watches, for the metrics.
type statsReader interface {
	Stats() []dynamicwatch.ScopeStats
}

func (c *watchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- watchedObjectsDesc
	ch <- watchesDesc
}

func (c *watchCollector) Collect(ch chan<- prometheus.Metric) {
	stats := c.w.Stats()
	objects := map[schema.GroupVersionResource]int{}
	for _, s := range stats {
		objects[s.Scope.Resource] += s.Objects
	}
	for gvr, n := range objects {
		ch <- prometheus.MustNewConstMetric(watchedObjectsDesc, prometheus.GaugeValue, float64(n), gvr.Group, gvr.Version, gvr.Resource)
	}
	ch <- prometheus.MustNewConstMetric(watchesDesc, prometheus.GaugeValue, float64(len(stats)))
}
