package view

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/gate"
)

// Agent is a Flux Kustomization or an Argo CD Application that deploys an environment, as its
// card shows it.
type Agent struct {
	Kind, Namespace, Name string
	// State is Flux's Ready condition (Ready, Not ready, Reconciling) or Argo CD's sync status
	// (Synced, OutOfSync); OK is set when it is Ready or Synced.
	State string
	OK    bool
	// Health is Argo CD's health status; Message the Ready condition's reason and message.
	Health, Message string
	// Revision is the last revision it applied (Flux's lastAppliedRevision, such as
	// env/dev@sha1:…) or synced (Argo CD's status.sync.revision).
	Revision string
	// Held is set while a gate holds it; Suspended while anything suspends it, with Reason.
	Held, Suspended bool
	Reason          string
	// Gates are the gates its gating.sluice.dev/gates annotation names.
	Gates []string
}

// AgentOf reads an agent's object, of kind Kustomization or Application.
func AgentOf(kind string, u *unstructured.Unstructured) Agent {
	t := GateTarget(kind, u)
	a := Agent{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), Held: t.Held, Suspended: t.Suspended, Reason: t.Reason}
	for _, r := range gate.RefsOfObject(u) {
		a.Gates = append(a.Gates, r.String())
	}
	if kind == "Application" {
		a.State, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
		a.Health, _, _ = unstructured.NestedString(u.Object, "status", "health", "status")
		a.Revision, _, _ = unstructured.NestedString(u.Object, "status", "sync", "revision")
		a.OK = a.State == "Synced"
		if a.State == "" {
			a.State = "not synced yet"
		}
		return a
	}
	a.Revision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	if suspended, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); suspended && !a.Suspended {
		a.Suspended, a.Reason = true, "spec.suspend"
	}
	a.State = "not reconciled yet"
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		status, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		switch status {
		case "True":
			a.State, a.OK = "Ready", true
		case "False":
			a.State = "Not ready"
		default:
			a.State = "Reconciling"
		}
		if !a.OK {
			a.Message = joinNonEmpty(reason, message)
		}
	}
	return a
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}

// SortAgents orders agents by kind, namespace and name, so a card stays put as it updates.
func SortAgents(agents []Agent) {
	slices.SortFunc(agents, func(a, b Agent) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
