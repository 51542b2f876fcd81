package view

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAgentOfReadsReadySyncRevisionAndHold(t *testing.T) {
	u := func(annotations map[string]any, spec, status map[string]any) *unstructured.Unstructured {
		o := map[string]any{"metadata": map[string]any{"namespace": "flux-system", "name": "apps", "annotations": annotations}, "spec": spec, "status": status}
		return &unstructured.Unstructured{Object: o}
	}
	ready := func(status, reason, message string) map[string]any {
		return map[string]any{"lastAppliedRevision": "env/dev@sha1:abc", "conditions": []any{map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message}}}
	}
	held := map[string]any{"gating.sluice.dev/gates": "freeze", "gating.sluice.dev/hold": "{}", "reconcile.fluxcd.io/suspended": "held by flux-system/freeze: audit"}
	for name, tc := range map[string]struct {
		kind string
		obj  *unstructured.Unstructured
		want Agent
	}{
		"ready": {"Kustomization", u(nil, nil, ready("True", "ReconciliationSucceeded", "Applied")),
			Agent{State: "Ready", OK: true, Revision: "env/dev@sha1:abc"}},
		"not ready, with why": {"Kustomization", u(nil, nil, ready("False", "BuildFailed", "kustomize build failed")),
			Agent{State: "Not ready", Message: "BuildFailed: kustomize build failed", Revision: "env/dev@sha1:abc"}},
		"reconciling": {"Kustomization", u(nil, nil, ready("Unknown", "Progressing", "")),
			Agent{State: "Reconciling", Message: "Progressing", Revision: "env/dev@sha1:abc"}},
		"never reconciled": {"Kustomization", u(nil, nil, nil), Agent{State: "not reconciled yet"}},
		"held by a gate": {"Kustomization", u(held, nil, ready("True", "", "")),
			Agent{State: "Ready", OK: true, Revision: "env/dev@sha1:abc", Held: true, Suspended: true, Reason: "held by flux-system/freeze: audit", Gates: []string{"flux-system/freeze"}}},
		"suspended by hand": {"Kustomization", u(nil, map[string]any{"suspend": true}, nil),
			Agent{State: "not reconciled yet", Suspended: true, Reason: "spec.suspend"}},
		"argo synced": {"Application", u(nil, nil, map[string]any{"sync": map[string]any{"status": "Synced", "revision": "abc"}, "health": map[string]any{"status": "Healthy"}}),
			Agent{State: "Synced", OK: true, Health: "Healthy", Revision: "abc"}},
		"argo out of sync": {"Application", u(nil, nil, map[string]any{"sync": map[string]any{"status": "OutOfSync", "revision": "abc"}, "health": map[string]any{"status": "Degraded"}}),
			Agent{State: "OutOfSync", Health: "Degraded", Revision: "abc"}},
	} {
		tc.want.Kind, tc.want.Namespace, tc.want.Name = tc.kind, "flux-system", "apps"
		assert.Equal(t, tc.want, AgentOf(tc.kind, tc.obj), name)
	}
}
