// Package metrics owns the Prometheus registry of a controller process and the metrics every
// Sluice controller shares: client-go's workqueue_*, rest_client_* and leader_election_* under
// their ecosystem names, sluice_controller_reconcile_* per controller and result, and
// sluice_object_condition for the objects in the caches.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry is the one registry served on /metrics. A private registry (not the global default)
// keeps tests that start several managers in one process from colliding; only the client-go
// collectors, which client-go accepts once per process, are shared between registries.
type Registry struct {
	*prometheus.Registry
	Reconcile  *ReconcileMetrics
	Workqueue  *WorkqueueProvider
	Conditions *Conditions
}

// NewRegistry returns a registry with the Go and process collectors plus the shared metrics.
func NewRegistry() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	clientGo.register(reg)
	conds := &Conditions{}
	reg.MustRegister(conds)
	return &Registry{
		Registry:   reg,
		Reconcile:  newReconcileMetrics(reg),
		Workqueue:  newWorkqueueProvider(reg),
		Conditions: conds,
	}
}

// ReconcileMetrics counts reconciles per controller and result, and times them.
type ReconcileMetrics struct {
	Total    *prometheus.CounterVec
	Duration *prometheus.HistogramVec
}

// Reconcile results, as the `result` label.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	ResultRequeue = "requeue_after"
	ResultPanic   = "panic"
)

func newReconcileMetrics(reg prometheus.Registerer) *ReconcileMetrics {
	m := &ReconcileMetrics{
		Total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_controller_reconcile_total",
			Help: "Reconciles by controller and result.",
		}, []string{"controller", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_controller_reconcile_duration_seconds",
			Help:    "Time spent in one reconcile.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"controller"}),
	}
	reg.MustRegister(m.Total, m.Duration)
	return m
}
