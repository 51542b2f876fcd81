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
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/ui/internal/view"
)

func renderPage(t *testing.T, name string, data any) string {
	t.Helper()
	pages, err := parsePages()
	require.NoError(t, err)
	var buf bytes.Buffer
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	require.NoError(t, pages[name].ExecuteTemplate(&buf, "layout", page{Title: name, Now: now, User: "alice", CanAct: true, Data: data,
		may: func(string, string, string, string) bool { return true }}))
	return buf.String()
}

// A Suspend from the UI sets only the annotation: the gate's page and the RollbackPolicy's row
// must then offer Resume and say suspended, as they do for spec.suspend.
func TestSuspendedByTheAnnotationOffersResume(t *testing.T) {
	annotated := metav1.ObjectMeta{Namespace: "team", Name: "freeze", Annotations: map[string]string{suspend.Annotation: "auditors at work"}}
	gate := renderPage(t, "gates", gatesData{Gates: []*gatingv1alpha1.Gate{{ObjectMeta: annotated}}, One: true})
	assert.Contains(t, gate, `href="/act/resume/team/freeze?kind=Gate">Resume…`)
	assert.Contains(t, gate, "suspended: auditors at work")
	policy := renderPage(t, "rollbacks", rollbacksData{Policies: []*rollbackv1alpha1.RollbackPolicy{{ObjectMeta: annotated}}})
	assert.Contains(t, policy, "suspended: auditors at work")
	assert.Contains(t, policy, `href="/act/resume/team/freeze?kind=RollbackPolicy">Resume…`)
	bySpec := renderPage(t, "rollbacks", rollbacksData{Policies: []*rollbackv1alpha1.RollbackPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"},
		Spec: rollbackv1alpha1.RollbackPolicySpec{Suspend: true}}}})
	assert.Contains(t, bySpec, `href="/act/resume/team/p?kind=RollbackPolicy">Resume…`)
	running := renderPage(t, "rollbacks", rollbacksData{Policies: []*rollbackv1alpha1.RollbackPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p"}}}})
	assert.Contains(t, running, `href="/act/suspend/team/p?kind=RollbackPolicy">Suspend…`)
	assert.NotContains(t, running, "suspended:")
}

// The blocked reason is visible text, once, on the list and on the card; phases say their name.
func TestBlockedReasonIsTextShownOnce(t *testing.T) {
	reason := "gate team/freeze is closed"
	ps := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "env/prod"}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{Branch: "env/prod",
			Active:  promoterv1alpha1.CommitState{DrySHA: strings.Repeat("a", 40), Phase: "failure"},
			Blocked: reason, Blocks: []promoterv1alpha1.PromotionBlock{{Rule: promoterv1alpha1.BlockGates, Environment: "env/prod", Message: reason}}}}}}
	card := renderPage(t, "pipeline", pipelineData{Pipeline: view.BuildPipeline(ps, view.PipelineInput{Gate: func(string, string) *gatingv1alpha1.Gate { return nil }})})
	assert.Equal(t, 1, strings.Count(card, reason), "the card prints the reason once")
	assert.Contains(t, card, "✗ failure")
	list := renderPage(t, "pipelines", pipelinesData{Pipelines: []view.Summary{view.Summarize(ps)}, Matched: 1, Total: 1, From: 1, To: 1})
	assert.Contains(t, list, `<div class="why" data-blocked>waits: `+reason+`</div>`, "visible text, not a tooltip")
	assert.NotContains(t, list, `title="`+reason, "no tooltip-only reason")
	assert.Contains(t, list, "✗ failure", "the phase is written, not only coloured")
	assert.NotContains(t, list, "accesskey")
}
