package view

import (
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
)

// withApprovals notes on each closed gate the approval, among those its status says are in
// force, that covers sha (the dry SHA an environment would promote), matched as the promoter
// matches it (gate.RevisionsMatch).
func withApprovals(holds []GateHold, sha string, lookup func(namespace, name string) *gatingv1alpha1.Gate) []GateHold {
	if sha == "" {
		return holds
	}
	for i, h := range holds {
		if h.Missing || h.Open {
			continue
		}
		g := lookup(h.Namespace, h.Name)
		if g == nil {
			continue
		}
		for _, a := range g.Status.Approvals {
			if gate.RevisionsMatch(a.Revision, sha) {
				holds[i].Approval = &a
				break
			}
		}
	}
	return holds
}
