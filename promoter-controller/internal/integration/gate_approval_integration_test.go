package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// approveDrySHA adds an approval of dry to a closed gate, and writes the status the
// gate-controller would: the promoter reads only Gate status.
func (f *fixture) approveDrySHA(name, dry string) {
	f.t.Helper()
	gates := env.Sluice.GatingV1alpha1().Gates(f.ns)
	g, err := gates.Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	g.Spec.Approvals = append(g.Spec.Approvals, gatingv1alpha1.GateApproval{Revision: dry, By: "release-manager"})
	g, err = gates.Update(f.ctx, g, metav1.UpdateOptions{})
	require.NoError(f.t, err)
	g.Status.ObservedGeneration = g.Generation
	g.Status.Approvals = g.Spec.Approvals
	for i := range g.Status.Conditions {
		g.Status.Conditions[i].ObservedGeneration = g.Generation
	}
	_, err = gates.UpdateStatus(f.ctx, g, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

// A gate on prod that stays closed approves one dry SHA: that one merges, the next waits for
// its own approval.
func TestAGateOnProdApprovingOneDrySHALetsOnlyThatOneMerge(t *testing.T) {
	f := newFixture(t)
	f.bootstrap("dev", "prod")
	f.setGate("prod-signoff", false)
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod", Gates: &promoterv1alpha1.GateSelector{
			Refs: []promoterv1alpha1.GateReference{{Name: "prod-signoff"}},
		}}}
	})
	startPromoter(t, env.Config, t.TempDir())

	d1 := f.dryCommit("bump image to 1.1")
	f.hydrate(d1, "dev", "prod")
	dev := f.waitEnv("dev", "promoted to d1", testenv.PromotedTo(d1))
	f.setStatus("health", dev.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusSuccess)
	prod := f.waitEnv("prod", "held by the closed gate, d1 not approved", blockedBy("prod-signoff"))
	assert.NotEqual(t, d1, prod.Active.DrySHA)

	f.approveDrySHA("prod-signoff", d1)
	f.waitEnv("prod", "promoted to the approved d1", testenv.PromotedTo(d1))

	d2 := f.dryCommit("bump image to 1.2")
	f.hydrate(d2, "dev", "prod")
	dev = f.waitEnv("dev", "promoted to d2", testenv.PromotedTo(d2))
	f.setStatus("health", dev.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusSuccess)
	prod = f.waitEnv("prod", "held: d2 is not approved", blockedBy("it approves "+d1[:12]+", not "+d2[:12]))
	assert.Equal(t, d1, prod.Active.DrySHA, "prod stays on the approved d1")

	f.approveDrySHA("prod-signoff", d2)
	prod = f.waitEnv("prod", "promoted to the approved d2", testenv.PromotedTo(d2))
	assert.Len(t, prod.History, 2)
	g, err := env.Sluice.GatingV1alpha1().Gates(f.ns).Get(f.ctx, "prod-signoff", metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, g.Status.Open, "the gate stayed closed throughout")
}
