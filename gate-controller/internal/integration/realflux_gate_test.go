package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// quietIntervals is how many apply intervals a test lets pass to show that kustomize-controller
// did nothing: it reconciles at every interval, so three without a change is no accident.
const quietIntervals = 3

// driftStatic changes data.static of the applied ConfigMap in the cluster, as a person with
// kubectl edit would; kustomize-controller corrects it at its next apply.
func (f *realFlux) driftStatic(t *testing.T) {
	t.Helper()
	_, err := testenv.Update(context.Background(), env.Kube.CoreV1().ConfigMaps(f.ns), fluxConfigMap, func(cm *corev1.ConfigMap) {
		cm.Data["static"] = "drifted"
	})
	require.NoError(t, err)
}

// A closed gate holds a real Kustomization: a commit pushed while it is closed is fetched by
// source-controller but not applied, and a field drifted in the cluster is not corrected. Once the
// gate opens, kustomize-controller applies both. The times from closing to the hold landing and
// from opening to the change applied are logged, for docs/benchmarks.md.
func TestAClosedGateHoldsARealKustomizationAndOpeningAppliesWhatWaited(t *testing.T) {
	sharedController(t)
	t.Parallel()
	const interval = 2 * time.Second
	f, first := startRealFlux(t, interval, "prod")
	flux.WaitForApplied(t, env, f.ns, "apps", flux.Revision("main", first))

	closed := time.Now()
	updateGate(t, f.ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = true; g.Spec.Message = "release sign-off" })
	waitObject(t, f.ks, time.Minute, "held", heldByController)
	t.Logf("close -> hold landed on the Kustomization: %s", time.Since(closed).Round(time.Millisecond))

	second := f.commit(t, "B")
	flux.WaitForFetched(t, env, f.ns, "fleet", flux.Revision("main", second))
	f.driftStatic(t)
	fetched := time.Now()
	for time.Since(fetched) < quietIntervals*interval {
		got := f.live(t)
		require.Equal(t, "A", got["value"], "a commit was applied while the gate was closed")
		require.Equal(t, "drifted", got["static"], "drift was corrected while the gate was closed")
		time.Sleep(100 * time.Millisecond)
	}

	opened := time.Now()
	updateGate(t, f.ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	err := testenv.Wait(context.Background(), flux.ApplyTimeout, func(context.Context) (bool, error) {
		got := f.live(t)
		return got["value"] == "B" && got["static"] == "from-git", nil
	})
	require.NoError(t, err, "after the gate opened the ConfigMap is %v", f.live(t))
	t.Logf("open -> commit applied and drift corrected: %s (interval %s)", time.Since(opened).Round(time.Millisecond), interval)
	flux.WaitForApplied(t, env, f.ns, "apps", flux.Revision("main", second))
}
