package scmmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/github"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmmetrics"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
)

const (
	token = "ghp_metrics_test_token_0123"
	sha   = "1111111111111111111111111111111111111111"
	key   = "team/github"
)

// value returns the value of the series of family name whose labels include want, or false.
func value(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, want) {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue(), true
				case m.Gauge != nil:
					return m.GetGauge().GetValue(), true
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount()), true
				}
			}
		}
	}
	return 0, false
}

func matches(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func TestCallsAnswersAndQuotaAreMeasured(t *testing.T) {
	srv := scmtest.NewGitHub(t, token)
	srv.AddRepo("acme", "app")
	srv.SetQuota(2, time.Minute)

	reg := prometheus.NewRegistry()
	limiters := ratelimit.NewRegistry()
	m := scmmetrics.New(reg, limiters)
	p, err := github.New(scm.Config{
		Key: key, BaseURL: srv.URL, CABundle: srv.CAPEM,
		Credentials:   scm.Credentials{Token: token},
		Limiters:      limiters,
		MaxWait:       time.Millisecond,
		WrapTransport: m.WrapTransport(key),
	})
	require.NoError(t, err)
	p = m.Instrument(p, key)
	repo := scm.Repository{Owner: "acme", Name: "app"}

	for range 3 {
		_, _ = p.SetCommitStatus(context.Background(), repo, scm.CommitStatus{SHA: sha, Name: "ci", State: scm.StatusSuccess})
	}
	_, err = p.SetCommitStatus(context.Background(), scm.Repository{Owner: "acme", Name: "missing"}, scm.CommitStatus{SHA: sha, Name: "ci", State: "bogus"})
	require.Error(t, err)

	call := func(result string) float64 {
		v, _ := value(t, reg, "sluice_scm_calls_total", map[string]string{
			"provider": key, "type": "github", "operation": scmmetrics.OpSetCommitStatus, "result": result})
		return v
	}
	assert.Equal(t, 2.0, call("success"))
	assert.Equal(t, 1.0, call("rate_limited"), "the answer carrying a remaining quota of zero paused the limiter")
	assert.Equal(t, 1.0, call("invalid"), "refused before sending")
	assert.Equal(t, int64(2), srv.StatusPosts(), "the paused and the invalid call never reached GitHub")

	created, _ := value(t, reg, "sluice_scm_http_responses_total", map[string]string{"provider": key, "code": "201"})
	assert.Equal(t, 2.0, created)
	timed, _ := value(t, reg, "sluice_scm_call_duration_seconds", map[string]string{"provider": key, "operation": scmmetrics.OpSetCommitStatus})
	assert.Equal(t, 4.0, timed)

	remaining, ok := value(t, reg, "sluice_scm_ratelimit_remaining", map[string]string{"provider": key})
	require.True(t, ok)
	assert.Equal(t, 0.0, remaining)
	limit, _ := value(t, reg, "sluice_scm_ratelimit_limit", map[string]string{"provider": key})
	assert.Equal(t, 2.0, limit)
	paused, _ := value(t, reg, "sluice_scm_ratelimit_paused_seconds", map[string]string{"provider": key})
	assert.Greater(t, paused, 0.0)

	m.Forget(key)
	limiters.Forget(key)
	_, ok = value(t, reg, "sluice_scm_calls_total", map[string]string{"provider": key})
	assert.False(t, ok, "a deleted ScmProvider's series are dropped")
	_, ok = value(t, reg, "sluice_scm_ratelimit_remaining", map[string]string{"provider": key})
	assert.False(t, ok)
}
