package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// expression is one PromQL expression of an alert, a recording rule or a dashboard panel.
type expression struct {
	Where string // alert, record or panel title, for messages
	Text  string
	// Records is the series a recording rule writes: expressions may read it though no
	// controller exports it.
	Records string
}

// selector is a metric a parsed expression reads, and the labels it matches on.
type selector struct {
	Metric string
	Labels []string
	Where  string
}

// ruleExpressions renders the sluice chart with its PrometheusRules on, every controller
// enabled, and returns the expressions of its alerts and recording rules.
func ruleExpressions(t *testing.T) []expression {
	t.Helper()
	umbrella, err := charts.Umbrella()
	require.NoError(t, err)
	helm, err := charts.NewHelm(&testenv.Env{})
	require.NoError(t, err)
	defer helm.Close()
	ctx := context.Background()
	require.NoError(t, helm.DependencyBuild(ctx, umbrella))
	out, err := helm.Template(ctx, "sluice", "sluice-system", umbrella,
		[]string{"--api-versions", "monitoring.coreos.com/v1/PrometheusRule"}, "monitoring.prometheusRules.enabled=true")
	require.NoError(t, err)
	objs, err := charts.Objects(out)
	require.NoError(t, err)
	var exprs []expression
	for _, rule := range charts.OfKind(objs, "PrometheusRule") {
		groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				r := r.(map[string]any)
				e := expression{Where: fmt.Sprintf("alert %v", r["alert"]), Text: fmt.Sprint(r["expr"])}
				if record, ok := r["record"].(string); ok {
					e.Where, e.Records = "record "+record, record
				}
				exprs = append(exprs, e)
			}
		}
	}
	require.NotEmpty(t, exprs, "the chart renders alerts")
	records := 0
	for _, e := range exprs {
		if e.Records != "" {
			records++
		}
	}
	require.NotZero(t, records, "the chart renders recording rules")
	return exprs
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboardExpressions returns the expression of every target of every panel of the dashboard.
func dashboardExpressions(t *testing.T) []expression {
	t.Helper()
	umbrella, err := charts.Umbrella()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(umbrella, "dashboards", "sluice.json"))
	require.NoError(t, err)
	var dashboard struct {
		Panels []panel `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dashboard))
	var exprs []expression
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			for _, target := range p.Targets {
				exprs = append(exprs, expression{Where: "panel " + p.Title, Text: target.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dashboard.Panels)
	require.NotEmpty(t, exprs, "the dashboard has panels with queries")
	return exprs
}

// grafanaVariable is one of Grafana's interval variables, which are not PromQL.
var grafanaVariable = regexp.MustCompile(`\$__(rate_interval|interval|range)\b`)

// selectors parses every expression with the PromQL parser and returns what each one reads, but
// for the series recording rules write: their own expressions are checked instead.
func selectors(exprs []expression) ([]selector, error) {
	recorded := map[string]bool{}
	for _, e := range exprs {
		if e.Records != "" {
			recorded[e.Records] = true
		}
	}
	var out []selector
	for _, e := range exprs {
		text := grafanaVariable.ReplaceAllString(e.Text, "5m")
		if strings.Contains(text, "$") {
			return nil, fmt.Errorf("%s: a Grafana variable the test cannot replace: %s", e.Where, e.Text)
		}
		parsed, err := parser.NewParser(parser.Options{}).ParseExpr(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", e.Where, err, e.Text)
		}
		parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			s := selector{Metric: vs.Name, Where: e.Where}
			for _, m := range vs.LabelMatchers {
				switch {
				case m.Name == labels.MetricName:
					s.Metric = m.Value
				default:
					s.Labels = append(s.Labels, m.Name)
				}
			}
			if !recorded[s.Metric] {
				out = append(out, s)
			}
			return nil
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metric < out[j].Metric })
	return out, nil
}
