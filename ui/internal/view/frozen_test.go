package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

func evaluatedGate(ns, name string, open bool) *gatingv1alpha1.Gate {
	status := metav1.ConditionTrue
	if !open {
		status = metav1.ConditionFalse
	}
	return &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: gatingv1alpha1.GateStatus{Open: open, Conditions: []metav1.Condition{{Type: gatingv1alpha1.ConditionOpen, Status: status}}}}
}

func TestFrozenListsClosedGatesWithWhatTheyHold(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	since, next := metav1.NewTime(now.Add(-time.Hour)), metav1.NewTime(now.Add(2*time.Hour))
	closed := evaluatedGate("team", "freeze", false)
	closed.Status.Reason, closed.Status.Message, closed.Status.Holding = "Window", "No deploy Friday", 2
	closed.Status.LastTransitionTime, closed.Status.NextTransitionTime = &since, &next
	closed.Status.Held = []gatingv1alpha1.HeldObject{{Kind: "Kustomization", Namespace: "team", Name: "apps"}, {Kind: "HelmRelease", Namespace: "team", Name: "db"}}
	manual := evaluatedGate("ops", "stop", false)
	manual.Spec.Closed = true
	unevaluated := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "new"}}
	strategy := &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{Environments: []promoterv1alpha1.Environment{{Branch: "env/dev"},
			{Branch: "env/prod", Gates: &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "freeze"}, {Name: "stop", Namespace: "ops"}}}}}},
		Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{{Branch: "env/prod", Blocked: "gate team/freeze is closed"}}}}
	referencing := func(ns, name string) []Target {
		if ns == "team" && name == "freeze" {
			return []Target{{Kind: "Kustomization", Namespace: "team", Name: "apps", Held: true, Suspended: true, Reason: "held by gate team/freeze"},
				{Kind: "Kustomization", Namespace: "team", Name: "idle"}}
		}
		return nil
	}
	got := Frozen(FrozenInput{Gates: []*gatingv1alpha1.Gate{closed, evaluatedGate("team", "open", true), unevaluated, manual},
		Referencing: referencing, Strategies: []*promoterv1alpha1.PromotionStrategy{strategy}, Now: now})
	require.Len(t, got, 2, "the closed gates only: not the open one, nor one not evaluated yet")
	assert.Equal(t, "ops", got[0].Namespace, "sorted by namespace")
	assert.Nil(t, got[0].Until, "closed by hand: until someone opens it")
	f := got[1]
	assert.Equal(t, "No deploy Friday", f.Message)
	assert.Equal(t, since.Time, *f.Since)
	assert.Equal(t, next.Time, *f.Until)
	assert.Equal(t, []Target{{Kind: "HelmRelease", Namespace: "team", Name: "db", Held: true},
		{Kind: "Kustomization", Namespace: "team", Name: "apps", Held: true, Suspended: true, Reason: "held by gate team/freeze"}}, f.Held,
		"the status's list and the held targets, once each, with the reason the object carries; the idle one is not held")
	assert.Equal(t, []GatedEnvironment{{Namespace: "team", Name: "web", Branch: "env/prod", Blocked: "gate team/freeze is closed"}}, f.Promotions)
	assert.Equal(t, []GatedEnvironment{{Namespace: "team", Name: "web", Branch: "env/prod", Blocked: "gate team/freeze is closed"}}, got[0].Promotions,
		"a ref with a namespace names the gate there")

	sum := WithClosedGates(Summarize(strategy), strategy, func(ns, name string) *gatingv1alpha1.Gate {
		if ns == "team" && name == "freeze" {
			return closed
		}
		return evaluatedGate(ns, name, true)
	})
	assert.Empty(t, sum.Environments[0].Closed, "dev names no gate")
	require.Len(t, sum.Environments[1].Closed, 1, "prod: the closed gate, not the open one")
	assert.Equal(t, "No deploy Friday", sum.Environments[1].Closed[0].Message)
}

func TestAClosingOverrideSaysUntilWhen(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	g := evaluatedGate("team", "freeze", false)
	g.Spec.Override = &gatingv1alpha1.GateOverride{State: gatingv1alpha1.StateClosed, Until: metav1.NewTime(now.Add(3 * time.Hour))}
	got := Frozen(FrozenInput{Gates: []*gatingv1alpha1.Gate{g}, Now: now})
	require.Len(t, got, 1)
	assert.Equal(t, now.Add(3*time.Hour), *got[0].Until)
}
