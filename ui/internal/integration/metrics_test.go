package integration

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestTheUIsMetricsAreServedAndMove: the sluice_ui_* metrics are on the metrics address (not the
// pages' listener), and a page served, a stream opened and a change pushed move them.
func TestTheUIsMetricsAreServedAndMove(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, Phase: "success"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, _ := managers.Load(url)
	addrs, err := m.(*manager.Manager).Probes.Addrs(ctx)
	require.NoError(t, err)
	client := &http.Client{Jar: newJar(t)}
	token, _ := launchTokens.Load(url)
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	get(setup.LaunchURL(strings.TrimPrefix(url, "http://"), token.(string)))
	code, _ := get(url + "/metrics")
	assert.NotEqual(t, http.StatusOK, code, "the pages' listener serves no metrics")

	// The strategy was just created: the list (another route and page) shows when the UI has read it.
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		_, body := get(url + "/pipelines?q=" + ns)
		return strings.Contains(body, ns+"/checkout"), nil
	}, "the UI has read the strategy")
	page := `{page="pipeline"}`
	route := `{code="200",route="GET /pipelines/{namespace}/{name}"}`
	before := scrapeUI(t, "http://"+addrs.Metrics+"/metrics")
	code, _ = get(url + "/pipelines/" + ns + "/checkout")
	require.Equal(t, http.StatusOK, code)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/events?watch=PromotionStrategy/"+ns+"/checkout", nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && lines.Text() != "data: ok" {
	}
	after := scrapeUI(t, "http://"+addrs.Metrics+"/metrics")
	assert.Equal(t, before["sluice_ui_renders_total"+page]+1, after["sluice_ui_renders_total"+page])
	assert.Equal(t, before["sluice_ui_requests_total"+route]+1, after["sluice_ui_requests_total"+route])
	assert.Equal(t, before["sluice_ui_request_duration_seconds_count"+`{route="GET /pipelines/{namespace}/{name}"}`]+1,
		after["sluice_ui_request_duration_seconds_count"+`{route="GET /pipelines/{namespace}/{name}"}`])
	assert.Equal(t, before["sluice_ui_streams_open"]+1, after["sluice_ui_streams_open"], "the open stream is counted")
	assert.Greater(t, after["sluice_ui_stream_bytes_total"], before["sluice_ui_stream_bytes_total"])
}

// scrapeUI reads the sluice_ui_* metrics at url, by name and labels as in the exposition format
// (name{a="x",b="y"}); a histogram by its _count.
func scrapeUI(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for name, f := range families {
		if !strings.HasPrefix(name, "sluice_ui_") {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			slices.Sort(labels)
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[strings.Replace(key, name, name+"_count", 1)] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
