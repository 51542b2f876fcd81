// Package metrics holds the rollback-controller's domain metrics: rollbacks by trigger and
// result, and the two DORA measures a rollback completes, change failure rate and time to
// restore.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Triggers and results of rollbacks, as label values.
const (
	TriggerManual    = "manual"
	TriggerAutomatic = "automatic"

	ResultStarted = "started"
	ResultMerged  = "merged"
	ResultFailed  = "failed"
	// ResultSuperseded: a fix forward (or another change) landed first; nothing was merged.
	ResultSuperseded = "superseded"
)

// Rollbacks are the rollback-controller's metrics.
type Rollbacks struct {
	// Total counts rollbacks by trigger (manual, automatic) and result (started, merged,
	// failed). Change failure rate is its merged rate over the promoter's deployments:
	//   sum by (namespace, strategy, environment) (increase(sluice_rollback_rollbacks_total{result="merged"}[30d]))
	//   / sum by (namespace, strategy, environment) (increase(sluice_promoter_deployments_total[30d]))
	Total *prometheus.CounterVec
	// TimeToRestore is DORA's time to restore service: from the first failing status of the
	// bad commit to the revert merged. Known for automatic rollbacks, which record when the check
	// started failing.
	TimeToRestore *prometheus.HistogramVec
	// RevertDuration is from the revert commit pushed to its merge: how long the pull request
	// took (a person's wait included, with autoMerge false).
	RevertDuration *prometheus.HistogramVec
	// PolicyTriggers counts what RollbackPolicies decided when a check failed: fired, cooldown,
	// outside_window, already_reverted.
	PolicyTriggers *prometheus.CounterVec
}

// New registers the metrics with reg.
func New(reg prometheus.Registerer) *Rollbacks {
	env := []string{"namespace", "strategy", "environment"}
	m := &Rollbacks{
		Total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rollback_rollbacks_total",
			Help: "Rollbacks by environment, trigger (manual, automatic) and result (started, merged, failed).",
		}, append(env, "trigger", "result")),
		TimeToRestore: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_rollback_time_to_restore_seconds",
			Help:    "DORA time to restore: from the first failing commit status to the revert merged, per environment.",
			Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600, 86400},
		}, env),
		RevertDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_rollback_revert_duration_seconds",
			Help:    "From the revert commit pushed to its pull request merged, per environment.",
			Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600, 86400},
		}, env),
		PolicyTriggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rollback_policy_decisions_total",
			Help: "What RollbackPolicies decided about a failing check: fired, cooldown, outside_window, already_reverted.",
		}, append(env, "decision")),
	}
	reg.MustRegister(m.Total, m.TimeToRestore, m.RevertDuration, m.PolicyTriggers)
	return m
}
