package charts

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const prometheusRuleAPI = "monitoring.coreos.com/v1/PrometheusRule"

// The PrometheusRule is opt-in, and rendered only where its CRD is served or when forced, so
// enabling it before the Prometheus Operator is installed does not fail the install.
func TestPrometheusRuleOnlyWhereServedOrForced(t *testing.T) {
	umbrella := buildUmbrella(t)
	helm := renderer(t)
	served := []string{"--api-versions", prometheusRuleAPI}
	cases := []struct {
		name  string
		extra []string
		set   []string
		want  int
	}{
		{"off by default, even where served", served, nil, 0},
		{"enabled where served", served, []string{"monitoring.prometheusRules.enabled=true"}, 1},
		{"enabled where not served", nil, []string{"monitoring.prometheusRules.enabled=true"}, 0},
		{"forced where not served", nil, []string{"monitoring.prometheusRules.enabled=true", "monitoring.prometheusRules.always=true"}, 1},
	}
	for _, c := range cases {
		out, err := helm.Template(context.Background(), "sluice", "sluice-system", umbrella, c.extra, c.set...)
		require.NoError(t, err, c.name)
		objs, err := Objects(out)
		require.NoError(t, err)
		assert.Len(t, OfKind(objs, "PrometheusRule"), c.want, c.name)
	}

	// Alerts follow the controllers that are installed.
	out, err := helm.Template(context.Background(), "sluice", "sluice-system", umbrella, served,
		"monitoring.prometheusRules.enabled=true", "gate-controller.enabled=false")
	require.NoError(t, err)
	assert.NotContains(t, out, "SluiceGateHeldLongerThanExpected")
	assert.Contains(t, out, "SluicePromotionBlocked")
}

// The dashboard ConfigMap carries the dashboard JSON unchanged, for Grafana's sidecar.
func TestDashboardConfigMap(t *testing.T) {
	umbrella := buildUmbrella(t)
	helm := renderer(t)
	out, err := helm.Template(context.Background(), "sluice", "sluice-system", umbrella, nil,
		"monitoring.dashboard.enabled=true", "monitoring.dashboard.namespace=monitoring")
	require.NoError(t, err)
	objs, err := Objects(out)
	require.NoError(t, err)
	var found bool
	for _, cm := range OfKind(objs, "ConfigMap") {
		data, ok := cm.Object["data"].(map[string]any)["sluice.json"].(string)
		if !ok {
			continue
		}
		found = true
		assert.Equal(t, "monitoring", cm.GetNamespace())
		assert.Equal(t, "1", cm.GetLabels()["grafana_dashboard"])
		var dashboard struct {
			UID    string            `json:"uid"`
			Panels []json.RawMessage `json:"panels"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &dashboard))
		assert.Equal(t, "sluice-overview", dashboard.UID)
		assert.NotEmpty(t, dashboard.Panels)
	}
	assert.True(t, found, "the dashboard ConfigMap is rendered")
}
