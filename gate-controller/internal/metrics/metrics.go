// Package metrics defines the gate-controller's domain metrics.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Gates are the sluice_gate_* metrics.
type Gates struct {
	// Open is 1 while a gate is open, 0 while closed.
	Open *prometheus.GaugeVec
	// Transitions counts changes of a gate's effective state, by the state it changed to.
	Transitions *prometheus.CounterVec
	// Held is how many objects a gate holds.
	Held *prometheus.GaugeVec
	// EnforcementLatency is the time from a gate's transition to a target held or released for it.
	EnforcementLatency prometheus.Histogram
	// Kinds is 1 for each configured kind by whether it is watched or its CRD is missing.
	Kinds *prometheus.GaugeVec
	// HoldConflicts counts the holds and releases the API server refused because the target
	// changed since the controller read it, by target kind; each is read again and decided anew.
	HoldConflicts *prometheus.CounterVec
}

// New registers the metrics on reg.
func New(reg prometheus.Registerer) *Gates {
	m := &Gates{
		Open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_gate_open",
			Help: "1 while the gate is open, 0 while it is closed.",
		}, []string{"namespace", "name"}),
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_gate_transitions_total",
			Help: "Changes of a gate's effective state, by the state it changed to.",
		}, []string{"namespace", "name", "state"}),
		Held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_gate_held_targets",
			Help: "Objects the gate currently holds.",
		}, []string{"namespace", "name"}),
		EnforcementLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_gate_enforcement_latency_seconds",
			Help:    "Time from a gate's transition to an object held or released because of it.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		Kinds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_gate_target_kinds",
			Help: "Configured target kinds: state is watched, or missing while no CRD serves them.",
		}, []string{"target", "state"}),
		HoldConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_gate_hold_conflicts_total",
			Help: "Holds and releases refused because the target changed since it was read (another controller wrote it meanwhile), by target kind; each is read again and decided anew.",
		}, []string{"target"}),
	}
	reg.MustRegister(m.Open, m.Transitions, m.Held, m.EnforcementLatency, m.Kinds, m.HoldConflicts)
	return m
}

// Forget drops the series of a deleted gate.
func (m *Gates) Forget(namespace, name string) {
	m.Open.DeleteLabelValues(namespace, name)
	m.Held.DeleteLabelValues(namespace, name)
	m.Transitions.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
}
