// Package metrics holds the promoter-controller's domain metrics: git operations, promotions and
// the DORA deployment frequency and lead time, blocks, and webhook deliveries.
package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/pkg/git"
)

// Metrics are the promoter's domain metrics.
type Metrics struct {
	gitOps       *prometheus.CounterVec
	gitDuration  *prometheus.HistogramVec
	promotions   *prometheus.CounterVec
	deployments  *prometheus.CounterVec
	leadTime     *prometheus.HistogramVec
	blocked      *prometheus.CounterVec
	webhookEvent *prometheus.CounterVec
}

// New registers the promoter's metrics with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		gitOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_promoter_git_operations_total",
			Help: "Git operations by operation (fetch, merge) and result (success, stale, error).",
		}, []string{"operation", "result"}),
		gitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_promoter_git_operation_duration_seconds",
			Help:    "Duration of git operations by operation and result.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}, []string{"operation", "result"}),
		promotions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_promoter_promotions_total",
			Help: "Promotions by environment and how they were merged (sluice or external).",
		}, []string{"namespace", "strategy", "environment", "merged_by"}),
		deployments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_promoter_deployments_total",
			Help: "DORA deployment frequency: merges into each environment branch; take rate() over it.",
		}, []string{"namespace", "strategy", "environment"}),
		leadTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_promoter_lead_time_seconds",
			Help:    "DORA lead time for changes: from the dry commit to its merge into each environment.",
			Buckets: []float64{60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400},
		}, []string{"namespace", "strategy", "environment"}),
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_promoter_promotions_blocked_total",
			Help: "Times a proposed change became blocked, by the rule that blocked it.",
		}, []string{"namespace", "strategy", "environment", "rule"}),
		webhookEvent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_promoter_webhook_deliveries_total",
			Help: "Webhook deliveries by provider and result (accepted, forwarded, unforwarded, refused, malformed, ignored, unready).",
		}, []string{"provider", "result"}),
	}
	reg.MustRegister(m.gitOps, m.gitDuration, m.promotions, m.deployments, m.leadTime, m.blocked, m.webhookEvent)
	return m
}

// ObserveGit times one git operation.
func (m *Metrics) ObserveGit(op string, start time.Time, err error) {
	result := "success"
	switch {
	case errors.Is(err, git.ErrStale), errors.Is(err, git.ErrSourceMoved):
		result = "stale"
	case err != nil:
		result = "error"
	}
	m.gitOps.WithLabelValues(op, result).Inc()
	m.gitDuration.WithLabelValues(op, result).Observe(time.Since(start).Seconds())
}

// Promoted counts one promotion into an environment; lead is the time from the dry commit to the
// merge, negative when unknown.
func (m *Metrics) Promoted(namespace, strategy, environment string, external bool, lead time.Duration) {
	mergedBy := "sluice"
	if external {
		mergedBy = "external"
	}
	m.promotions.WithLabelValues(namespace, strategy, environment, mergedBy).Inc()
	m.deployments.WithLabelValues(namespace, strategy, environment).Inc()
	if lead >= 0 {
		m.leadTime.WithLabelValues(namespace, strategy, environment).Observe(lead.Seconds())
	}
}

// Blocked counts a proposed change that became blocked by rule.
func (m *Metrics) Blocked(namespace, strategy, environment, rule string) {
	m.blocked.WithLabelValues(namespace, strategy, environment, rule).Inc()
}

// WebhookDelivery counts one webhook delivery by provider and result.
func (m *Metrics) WebhookDelivery(provider, result string) {
	m.webhookEvent.WithLabelValues(provider, result).Inc()
}
