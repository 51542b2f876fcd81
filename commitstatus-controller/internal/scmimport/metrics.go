package scmimport

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the import.
type Metrics struct {
	// Reads counts ListCommitStatuses calls (each one or two SCM requests, see the provider).
	Reads prometheus.Counter
	// Writes counts imported CommitStatuses created, updated and deleted, by verb.
	Writes *prometheus.CounterVec
}

// NewMetrics registers the import's metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Reads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_commitstatus_import_reads_total",
			Help: "Reads of one commit's statuses, check runs and pipelines from an SCM by the import.",
		}),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_commitstatus_import_writes_total",
			Help: "Imported CommitStatuses created, updated and deleted, by verb.",
		}, []string{"verb"}),
	}
	reg.MustRegister(m.Reads, m.Writes)
	return m
}

func (m *Metrics) read() {
	if m != nil {
		m.Reads.Inc()
	}
}

func (m *Metrics) count(p Plan) {
	if m == nil {
		return
	}
	m.Writes.WithLabelValues("create").Add(float64(len(p.Create)))
	m.Writes.WithLabelValues("update").Add(float64(len(p.Update)))
	m.Writes.WithLabelValues("delete").Add(float64(len(p.Delete)))
}
