package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// stillApplies pushes a commit and reports whether real Flux applies it: it waits until the source
// has fetched it, then up to quietIntervals apply intervals for the ConfigMap to change.
func (f *realFlux) stillApplies(t *testing.T, value string, interval time.Duration) bool {
	t.Helper()
	sha := f.commit(t, value)
	flux.WaitForFetched(t, env, f.ns, "fleet", flux.Revision("main", sha))
	err := testenv.Wait(context.Background(), quietIntervals*interval, func(context.Context) (bool, error) {
		return f.liveValue(t) == value, nil
	})
	return err == nil
}

// What real kustomize-controller (v1.9.6) honours: the RFC-0006 annotation
// reconcile.fluxcd.io/suspended alone does not stop it, spec.suspend does, and so does
// `kubectl gate suspend`, which sets spec.suspend on Flux kinds with the reason in the annotation.
// Resuming applies what waited.
func TestRealKustomizeControllerHonoursSpecSuspendNotTheAnnotation(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	const interval = 2 * time.Second
	f, first := startRealFlux(t, interval, "")
	flux.WaitForApplied(t, env, f.ns, "apps", flux.Revision("main", first))
	patch := func(body string) {
		t.Helper()
		_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(f.ns).Patch(context.Background(), "apps", types.MergePatchType, []byte(body), metav1.PatchOptions{})
		require.NoError(t, err)
	}

	patch(`{"metadata":{"annotations":{"` + suspend.Annotation + `":"by annotation only"}}}`)
	require.True(t, f.stillApplies(t, "B", interval), "kustomize-controller ignores the annotation alone")

	patch(`{"metadata":{"annotations":{"` + suspend.Annotation + `":null}},"spec":{"suspend":true}}`)
	require.False(t, f.stillApplies(t, "C", interval), "kustomize-controller stops for spec.suspend")

	patch(`{"spec":{"suspend":null}}`)
	require.Eventually(t, func() bool { return f.liveValue(t) == "C" }, flux.ApplyTimeout, 100*time.Millisecond, "resumed, it applies what waited")

	out, err := kubectlGate(t, f.ns, "suspend", "kustomization/apps", "-m", "database migration, ask #platform")
	require.NoError(t, err, out)
	require.False(t, f.stillApplies(t, "D", interval), "kubectl gate suspend stops real reconciliation")

	out, err = kubectlGate(t, f.ns, "resume", "kustomization/apps")
	require.NoError(t, err, out)
	require.Eventually(t, func() bool { return f.liveValue(t) == "D" }, flux.ApplyTimeout, 100*time.Millisecond, "kubectl gate resume applies what waited")
}
