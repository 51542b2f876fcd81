package manifestrelease

import (
	"github.com/prometheus/client_golang/prometheus"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// Metrics of ManifestReleases.
type Metrics struct {
	// Upgrades counts finished upgrades by result: succeeded, rolled_back or failed (nothing to
	// roll back to).
	Upgrades *prometheus.CounterVec
	// Tests counts test runs by result: passed or failed.
	Tests *prometheus.CounterVec
	// Rollbacks counts finished rollbacks by trigger: automatic or manual.
	Rollbacks *prometheus.CounterVec
	// SnapshotBytes is the size of the newest snapshot, compressed (what the Secrets hold) and
	// uncompressed.
	SnapshotBytes *prometheus.GaugeVec
	// SnapshotSecrets is how many Secrets the newest snapshot takes.
	SnapshotSecrets *prometheus.GaugeVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Upgrades: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_manifestrelease_upgrades_total",
			Help: "Finished ManifestRelease upgrades by result (succeeded, rolled_back, failed).",
		}, []string{"namespace", "name", "result"}),
		Tests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_manifestrelease_tests_total",
			Help: "ManifestRelease test runs by result (passed, failed).",
		}, []string{"namespace", "name", "result"}),
		Rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_manifestrelease_rollbacks_total",
			Help: "Finished ManifestRelease rollbacks by trigger (automatic, manual).",
		}, []string{"namespace", "name", "trigger"}),
		SnapshotBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_manifestrelease_snapshot_bytes",
			Help: "Size of the newest snapshot of a ManifestRelease, compressed or uncompressed.",
		}, []string{"namespace", "name", "encoding"}),
		SnapshotSecrets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_manifestrelease_snapshot_secrets",
			Help: "Secrets taken by the newest snapshot of a ManifestRelease.",
		}, []string{"namespace", "name"}),
	}
	reg.MustRegister(m.Upgrades, m.Tests, m.Rollbacks, m.SnapshotBytes, m.SnapshotSecrets)
	return m
}

// Forget drops the series of a deleted release.
func (m *Metrics) Forget(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	m.Upgrades.DeletePartialMatch(labels)
	m.Tests.DeletePartialMatch(labels)
	m.Rollbacks.DeletePartialMatch(labels)
	m.SnapshotBytes.DeletePartialMatch(labels)
	m.SnapshotSecrets.DeletePartialMatch(labels)
}

// count increments the counter c names for mr.
func (m *Metrics) count(mr *rollbackv1.ManifestRelease, c count) {
	vec := map[string]*prometheus.CounterVec{"upgrades": m.Upgrades, "tests": m.Tests, "rollbacks": m.Rollbacks}[c.Metric]
	if vec != nil {
		vec.WithLabelValues(mr.Namespace, mr.Name, c.Value).Inc()
	}
}
