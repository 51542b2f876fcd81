package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// approvalRounds is how many times the approval race is run against real Flux.
const approvalRounds = 20

// appliedValues records every value of the ConfigMap that reached the cluster, in order, from a
// watch: each write is an event, so no applied revision goes unseen, however briefly it lived.
type appliedValues struct {
	mu     sync.Mutex
	values []string
}

func (a *appliedValues) add(v string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.values); n == 0 || a.values[n-1] != v {
		a.values = append(a.values, v)
	}
}

func (a *appliedValues) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.values...)
}

// watchApplied starts recording the ConfigMap's values until the test ends.
func (f *realFlux) watchApplied(t *testing.T) *appliedValues {
	t.Helper()
	w, err := env.Kube.CoreV1().ConfigMaps(f.ns).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", fluxConfigMap).String(),
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	seen := &appliedValues{}
	go func() {
		for e := range w.ResultChan() {
			if cm, ok := e.Object.(*corev1.ConfigMap); ok {
				seen.add(cm.Data["value"])
			}
		}
	}()
	return seen
}

// A closed gate approves one revision at a time against real Flux, 20 rounds: each round pushes
// B, approves B, waits until B is applied, then pushes C, which nobody approves, and lets the
// controllers run for a few intervals. Every value the ConfigMap ever had in the cluster is
// recorded; only approved ones may appear.
func TestAGateApprovingOneRevisionNeverLetsRealFluxApplyAnother(t *testing.T) {
	sharedController(t)
	t.Parallel()
	const interval = 2 * time.Second
	f, first := startRealFlux(t, interval, "prod")
	flux.WaitForApplied(t, env, f.ns, "apps", flux.Revision("main", first))
	seen := f.watchApplied(t)
	updateGate(t, f.ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = true; g.Spec.Message = "sign-off per revision" })
	waitObject(t, f.ks, time.Minute, "held", heldByController)

	approved := map[string]bool{"A": true}
	for round := 1; round <= approvalRounds; round++ {
		b := fmt.Sprintf("B%d", round)
		shaB := f.commit(t, b)
		approved[b] = true
		approve(t, f.ns, "prod", flux.Revision("main", shaB), "release-manager")
		err := testenv.Wait(context.Background(), flux.ApplyTimeout, func(context.Context) (bool, error) {
			return f.liveValue(t) == b, nil
		})
		require.NoError(t, err, "round %d: the approved %s was not applied; values seen: %v", round, b, seen.all())
		f.commit(t, fmt.Sprintf("C%d", round))
		time.Sleep(quietIntervals * interval)
	}
	var unapproved []string
	for _, v := range seen.all() {
		if !approved[v] {
			unapproved = append(unapproved, v)
		}
	}
	t.Logf("unapproved revisions applied in %d of %d rounds: %v (all values applied: %s)",
		len(unapproved), approvalRounds, unapproved, strings.Join(seen.all(), " "))
	require.Empty(t, unapproved, "real Flux applied revisions nobody approved")
}
