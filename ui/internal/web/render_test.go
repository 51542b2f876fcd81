package web

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/view"
)

// Every page's template parses with the layout; the browser tests render them with real objects.
func TestEveryPageParses(t *testing.T) {
	pages, err := parsePages()
	require.NoError(t, err)
	for _, name := range []string{"pipelines", "pipeline", "gates", "health", "rollbacks", "search", "notfound", "action", "confirm", "history", "frozen"} {
		assert.Contains(t, pages, name)
	}
}

// Pages render the values of a cluster's objects without a template error, and show them.
func TestPagesRenderTheirObjects(t *testing.T) {
	pages, err := parsePages()
	require.NoError(t, err)
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	closed := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "freeze"},
		Spec:   gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{{Schedule: "0 15 * * 5", Duration: metav1.Duration{Duration: 65 * time.Hour}, Kind: gatingv1alpha1.StateClosed}}},
		Status: gatingv1alpha1.GateStatus{Open: true, Reason: "Default", Held: []gatingv1alpha1.HeldObject{{Kind: "Kustomization", Namespace: "team", Name: "apps"}}}}
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec:   promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"}, {Branch: "env/prod"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{Branch: "env/prod", Blocked: "gate team/freeze is closed"}}}}
	promoted := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{Branch: "env/dev",
			Active: promoterv1alpha1.CommitState{DrySHA: strings.Repeat("a", 40), CommitTime: &metav1.Time{Time: now.Add(-4 * time.Hour)}},
			History: []promoterv1alpha1.PromotionRecord{{DrySHA: strings.Repeat("a", 40), Time: metav1.NewTime(now.Add(-2 * time.Hour))},
				{DrySHA: strings.Repeat("b", 40), Time: metav1.NewTime(now.Add(-48 * time.Hour))}}}}}}
	for name, tc := range map[string]struct {
		data any
		want []string
	}{
		"gates":     {gatesData{Gates: []*gatingv1alpha1.Gate{closed}}, []string{"team/freeze", "closed from Fri 27 Nov 15:00 to Mon 30 Nov 08:00", "Tue 24 Nov", "▲ now", "closes in 4 days", "Kustomization team/apps"}},
		"pipeline":  {pipelineData{Pipeline: view.BuildPipeline(ps, view.PipelineInput{Gate: func(string, string) *gatingv1alpha1.Gate { return nil }})}, []string{`id="env-env-prod"`, "gate team/freeze is closed"}},
		"pipelines": {pipelinesData{Pipelines: []view.Summary{view.Summarize(ps)}, Matched: 1, Total: 1, From: 1, To: 1}, []string{"/pipelines/team/web#env-env-dev", "1 of 1 PromotionStrategies"}},
		"health":    {healthData{Missing: &notInstalled{Kind: "HealthCheck", Chart: "health-controller"}}, []string{"HealthCheck is not installed on this cluster"}},
		"rollbacks": {rollbacksData{}, []string{"RevertCommits", "ManifestReleases"}},
		"history": {historyData{Kept: 10, History: view.BuildHistory(promoted, view.Links{}, nil, now)},
			[]string{`id="commit-` + strings.Repeat("a", 40) + `"`, "2026-11-23 08:00 UTC", "1.0 a day", `0% <span class="quiet">(0 of 2 reverted)`, `2h 0m <span class="quiet">(median of 1)`}},
	} {
		var buf bytes.Buffer
		require.NoError(t, pages[name].ExecuteTemplate(&buf, "layout", page{Title: name, Now: now, User: "alice", CanAct: true, Data: tc.data}), name)
		for _, w := range tc.want {
			assert.Contains(t, buf.String(), w, name)
		}
	}
}

// TestAGatePageListsTheObjectsThatReferenceIt: on a gate's own page, each referencing object
// with its state and suspend reason, and the target kinds that are not installed.
func TestAGatePageListsTheObjectsThatReferenceIt(t *testing.T) {
	pages, err := parsePages()
	require.NoError(t, err)
	gate := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "freeze"}}
	data := gatesData{Gates: []*gatingv1alpha1.Gate{gate}, One: true, TargetsMissing: []string{"Application (Argo CD)"},
		Targets: []view.Target{
			{Kind: "Kustomization", Namespace: "team", Name: "apps", Held: true, Suspended: true, Reason: "held by team/freeze"},
			{Kind: "Kustomization", Namespace: "team", Name: "db"},
		}}
	var buf bytes.Buffer
	require.NoError(t, pages["gates"].ExecuteTemplate(&buf, "layout", page{Title: "gate", Now: time.Now(), Data: data}))
	for _, w := range []string{"Objects that reference this gate", "<td>team/apps</td>", `badge bad">held`, "held by team/freeze",
		"<td>team/db</td>", `badge ok">running`, "not listed: Application (Argo CD)"} {
		assert.Contains(t, buf.String(), w)
	}

	buf.Reset()
	data.One = false
	require.NoError(t, pages["gates"].ExecuteTemplate(&buf, "layout", page{Title: "gates", Now: time.Now(), Data: data}))
	assert.NotContains(t, buf.String(), "Objects that reference this gate", "only on a gate's own page")
}
