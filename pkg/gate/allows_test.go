package gate

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

// evaluatedGate is a gate whose status is current and says open or closed consistently.
func evaluatedGate(namespace, name string, open bool, reason, message string) *gatingv1alpha1.Gate {
	status := metav1.ConditionFalse
	if open {
		status = metav1.ConditionTrue
	}
	return &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 4},
		Status: gatingv1alpha1.GateStatus{
			ObservedGeneration: 4,
			Open:               open,
			Reason:             reason,
			Message:            message,
			Conditions: []metav1.Condition{{
				Type: gatingv1alpha1.ConditionOpen, Status: status, Reason: reason, Message: message, ObservedGeneration: 4,
			}},
		},
	}
}

type gateStore map[Ref]*gatingv1alpha1.Gate

func (s gateStore) lookup(namespace, name string) (*gatingv1alpha1.Gate, error) {
	if g, ok := s[Ref{namespace, name}]; ok {
		return g, nil
	}
	return nil, apierrors.NewNotFound(gatingv1alpha1.Resource("gates"), name)
}

func TestAllows(t *testing.T) {
	freeze := Ref{"flux-system", "change-freeze"}
	bypass := Ref{"flux-system", "bypass-signoff"}
	missing := Ref{"flux-system", "no-such-gate"}
	store := gateStore{
		freeze: evaluatedGate("flux-system", "change-freeze", false, gatingv1alpha1.ReasonWindow, `closed by window "No Deploy Friday"`),
		bypass: evaluatedGate("flux-system", "bypass-signoff", true, gatingv1alpha1.ReasonDefault, ""),
	}
	cases := []struct {
		name       string
		refs       []Ref
		require    Require
		allowed    bool
		missing    []Ref
		denying    []Ref
		messageHas []string
	}{
		{name: "no gates let the target proceed", allowed: true},
		{name: "all: one open gate", refs: []Ref{bypass}, require: RequireAll, allowed: true},
		{name: "all: a closed gate holds, and says why", refs: []Ref{bypass, freeze}, require: RequireAll,
			denying: []Ref{freeze}, messageHas: []string{"flux-system/change-freeze", "Window", "No Deploy Friday"}},
		{name: "empty require means all", refs: []Ref{bypass, freeze}, denying: []Ref{freeze}},
		{name: "all: a missing gate holds (fail closed)", refs: []Ref{bypass, missing}, require: RequireAll,
			missing: []Ref{missing}, messageHas: []string{"flux-system/no-such-gate does not exist"}},
		{name: "oneOf: the bypass gate lets the target through a freeze", refs: []Ref{freeze, bypass}, require: RequireOneOf,
			allowed: true, denying: []Ref{freeze}, messageHas: []string{"flux-system/bypass-signoff"}},
		{name: "oneOf: an open gate is enough even when another is missing", refs: []Ref{missing, bypass}, require: RequireOneOf,
			allowed: true, missing: []Ref{missing}},
		{name: "oneOf: closed and missing gates hold", refs: []Ref{freeze, missing}, require: RequireOneOf,
			missing: []Ref{missing}, denying: []Ref{freeze}, messageHas: []string{"no gate is open", "does not exist", "No Deploy Friday"}},
		{name: "oneOf: only missing gates hold", refs: []Ref{missing}, require: RequireOneOf,
			missing: []Ref{missing}},
		{name: "an unknown requirement holds", refs: []Ref{bypass}, require: "most", messageHas: []string{`"most"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Allows(tc.refs, tc.require, store.lookup)
			assert.Equal(t, tc.allowed, v.Allowed, v.Message)
			assert.Equal(t, tc.missing, v.Missing)
			assert.Equal(t, tc.denying, v.Denying)
			assert.NotEmpty(t, v.Message)
			for _, part := range tc.messageHas {
				assert.Contains(t, v.Message, part)
			}
		})
	}
}

func TestAllowsTrustsOnlyCurrentConsistentStatus(t *testing.T) {
	ref := Ref{"team-a", "release"}
	cases := map[string]struct {
		mutate     func(*gatingv1alpha1.Gate)
		messageHas string
	}{
		"spec changed since the controller looked": {
			mutate:     func(g *gatingv1alpha1.Gate) { g.Generation = 5 },
			messageHas: "not been evaluated yet (generation 5, observed 4)",
		},
		"no Open condition yet": {
			mutate:     func(g *gatingv1alpha1.Gate) { g.Status.Conditions = nil },
			messageHas: "no Open condition",
		},
		"open field without an Open condition that agrees": {
			mutate:     func(g *gatingv1alpha1.Gate) { g.Status.Conditions[0].Status = metav1.ConditionFalse },
			messageHas: "contradictory",
		},
		"Open condition without the open field": {
			mutate:     func(g *gatingv1alpha1.Gate) { g.Status.Open = false },
			messageHas: "contradictory",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := evaluatedGate(ref.Namespace, ref.Name, true, gatingv1alpha1.ReasonDefault, "")
			assert.True(t, Allows([]Ref{ref}, RequireAll, gateStore{ref: g}.lookup).Allowed, "unchanged, the gate is open")
			tc.mutate(g)
			v := Allows([]Ref{ref}, RequireAll, gateStore{ref: g}.lookup)
			assert.False(t, v.Allowed)
			assert.Equal(t, []Ref{ref}, v.Denying)
			assert.Contains(t, v.Message, tc.messageHas)
		})
	}
}

func TestAllowsFailsClosedOnLookupErrors(t *testing.T) {
	ref := Ref{"team-a", "release"}
	broken := func(string, string) (*gatingv1alpha1.Gate, error) { return nil, errors.New("cache not synced") }
	for _, require := range []Require{RequireAll, RequireOneOf} {
		v := Allows([]Ref{ref}, require, broken)
		assert.False(t, v.Allowed, require)
		assert.Equal(t, []Ref{ref}, v.Denying)
		assert.Empty(t, v.Missing)
		assert.Contains(t, v.Message, "cache not synced")
	}
	nilGate := func(string, string) (*gatingv1alpha1.Gate, error) { return nil, nil }
	v := Allows([]Ref{ref}, RequireAll, nilGate)
	assert.False(t, v.Allowed)
	assert.Equal(t, []Ref{ref}, v.Missing)
}
