package view

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestActivityIsNewestFirstAndFilters(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 23, 10, m, 0, 0, time.UTC)) }
	event := func(ns, kind, name, reason, msg, component string, when metav1.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Type: corev1.EventTypeNormal, Reason: reason, Message: msg,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name, APIVersion: "gating.sluice.dev/v1alpha1"},
			Source:         corev1.EventSource{Component: component}, LastTimestamp: when}
	}
	events := []*corev1.Event{
		event("team", "Gate", "freeze", "Closed", "closed by a window", "gate-controller", at(1)),
		event("team", "Gate", "freeze", "ClosedFromUI", "Gate team/freeze: closed (by alice, from the Sluice UI)", "sluice-ui", at(3)),
		event("ops", "PromotionStrategy", "web", "SuspendedFromUI", "PromotionStrategy ops/web: suspended (by bob@example.com, from the Sluice UI)", "sluice-ui", at(2)),
	}
	rows, n := Activity(events, ActivityFilter{}, 10)
	assert.Equal(t, 3, n)
	assert.Equal(t, []string{"ClosedFromUI", "SuspendedFromUI", "Closed"}, []string{rows[0].Reason, rows[1].Reason, rows[2].Reason}, "newest first")
	assert.Equal(t, "alice", rows[0].Person)
	assert.Equal(t, "/gates/team/freeze", rows[0].Link)
	assert.Empty(t, rows[2].Person, "a controller's Event names no person")
	assert.Equal(t, "gate-controller", rows[2].Source)
	for name, tc := range map[string]struct {
		f    ActivityFilter
		want int
	}{
		"namespace":    {ActivityFilter{Namespace: "ops"}, 1},
		"kind":         {ActivityFilter{Kind: "gate"}, 2},
		"one object":   {ActivityFilter{Kind: "Gate", Namespace: "team", Name: "freeze"}, 2},
		"person":       {ActivityFilter{Person: "BOB"}, 1},
		"reason":       {ActivityFilter{Reason: "fromui"}, 2},
		"nothing":      {ActivityFilter{Namespace: "team", Person: "bob"}, 0},
		"another name": {ActivityFilter{Name: "other"}, 0},
	} {
		_, n := Activity(events, tc.f, 10)
		assert.Equal(t, tc.want, n, name)
	}
	rows, n = Activity(events, ActivityFilter{}, 1)
	assert.Len(t, rows, 1, "at most the limit")
	assert.Equal(t, 3, n, "but says how many matched")
	assert.Equal(t, "/activity?kind=Gate&name=freeze&namespace=team", ActivityURL("Gate", "team", "freeze"))
}
