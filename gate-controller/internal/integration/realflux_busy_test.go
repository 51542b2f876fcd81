package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// busyKustomizations is how many Kustomizations real kustomize-controller reconciles at once in
// the busy test, each writing its status at the start and the end of every reconcile.
const busyKustomizations = 6

// A gate closed the moment a new commit reaches real Flux, while kustomize-controller reconciles
// several Kustomizations every two seconds and writes their status meanwhile: the hold lands on
// every one of them, a commit pushed after it is applied by none while the gate stays closed,
// and all of them apply it once the gate opens. The time from closing to the last hold is logged
// (BenchmarkHoldBusyKustomizations measures it, with the conflicts, in docs/benchmarks.md).
func TestAHoldLandsOnEveryBusyRealKustomizationAndNothingIsAppliedWhileClosed(t *testing.T) {
	sharedController(t)
	t.Parallel()
	const interval = 2 * time.Second
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	waitGate(t, ns, "prod", wait, isOpen)
	repo, url := gittest.NewGitServedRepo(t, "fleet")
	names := make([]string, busyKustomizations)
	for i := range names {
		names[i] = fmt.Sprintf("app-%d", i)
	}
	commit := func(value string) string {
		files := map[string]string{}
		for _, name := range names {
			files[name+"/configmap.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
		}
		return repo.CommitFiles(t, "main", files, "value "+value)
	}
	first := commit("A")
	flux.Start(t, env, flux.Options{Namespace: ns})
	flux.CreateGitRepository(t, env, ns, "fleet", flux.GitRepositorySpec{URL: url, Branch: "main", Interval: interval})
	for _, name := range names {
		flux.CreateKustomization(t, env, ns, name, flux.KustomizationSpec{GitRepository: "fleet", Path: "./" + name,
			TargetNamespace: ns, Interval: interval, Annotations: map[string]string{gate.GatesAnnotation: "prod"}})
	}
	for _, name := range names {
		flux.WaitForApplied(t, env, ns, name, flux.Revision("main", first))
	}

	// Close the gate as a change arrives: kustomize-controller starts on every Kustomization.
	flux.WaitForFetched(t, env, ns, "fleet", flux.Revision("main", commit("B")))
	closed := time.Now()
	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = true })
	for _, name := range names {
		waitObject(t, object{gvr: flux.Kustomizations, kind: "Kustomization", namespace: ns, name: name}, time.Minute, "held", heldByController)
	}
	t.Logf("close -> hold landed on all %d busy Kustomizations: %s", len(names), time.Since(closed).Round(time.Millisecond))

	third := commit("C")
	flux.WaitForFetched(t, env, ns, "fleet", flux.Revision("main", third))
	fetched := time.Now()
	for time.Since(fetched) < quietIntervals*interval {
		for _, name := range names {
			require.NotEqual(t, "C", configMapValue(t, ns, name), "%s applied a commit while its gate was closed", name)
		}
		time.Sleep(100 * time.Millisecond)
	}

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	for _, name := range names {
		flux.WaitForApplied(t, env, ns, name, flux.Revision("main", third))
		require.Equal(t, "C", configMapValue(t, ns, name))
	}
}

// configMapValue is data.value of the named ConfigMap ("" when absent).
func configMapValue(t *testing.T, ns, name string) string {
	t.Helper()
	var value string
	err := testenv.Wait(context.Background(), time.Minute, func(ctx context.Context) (bool, error) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			value = ""
			return true, nil
		}
		if err != nil {
			return false, err
		}
		value = cm.Data["value"]
		return true, nil
	})
	require.NoError(t, err)
	return value
}
