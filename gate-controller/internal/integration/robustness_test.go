package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	gatestatus "github.com/sluicehq/sluice/gate-controller/internal/gatestatus"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

func stalledBy(reason string) func(*gatingv1alpha1.Gate) bool {
	return func(g *gatingv1alpha1.Gate) bool {
		c := conditions.Get(g.Status.Conditions, conditions.Stalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
	}
}

var sentinels atomic.Int64

// settled waits for a sentinel gate created after the others to be evaluated: the controller has
// worked through what was queued before it, so a write loop would have shown by then.
func settled(t *testing.T, ns string) {
	t.Helper()
	name := fmt.Sprintf("sentinel-%d", sentinels.Add(1))
	createGate(t, ns, name, gatingv1alpha1.GateSpec{})
	waitGate(t, ns, name, wait, isOpen)
}

// A kustomize commonAnnotation puts gating.sluice.dev/gates: selfie on the Gate selfie itself.
// The gate is never held by itself: it reports the loop once, opens and closes by hand, and its
// status is not rewritten over and over.
func TestAGateNamingItselfIsNeverHeld(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "selfie", Annotations: map[string]string{gate.GatesAnnotation: "selfie"}},
		Spec: gatingv1alpha1.GateSpec{Closed: true}}
	_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), g, metav1.CreateOptions{})
	require.NoError(t, err)
	stalled := waitGate(t, ns, "selfie", wait, stalledBy(gatingv1alpha1.ReasonGateCycle))
	assert.Contains(t, conditions.Get(stalled.Status.Conditions, conditions.Stalled).Message, "gate "+ns+"/selfie names itself")
	assert.Equal(t, gatingv1alpha1.ReasonManual, stalled.Status.Reason)
	assert.NotContains(t, stalled.Annotations, suspend.Annotation, "never suspended by itself")

	out, err := kubectlGate(t, ns, "open", "selfie")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/selfie open (Default)")
	settled(t, ns)
	final := getGate(t, ns, "selfie")
	assert.NotContains(t, final.Annotations, suspend.Annotation)
	assert.LessOrEqual(t, len(final.Status.History), 3, "no loop of transitions")
	// Events are sent asynchronously: wait for the first before checking there is only one.
	assert.Len(t, waitEvent(t, ns, "selfie", gatingv1alpha1.ReasonGateCycle), 1, "the cycle is reported once")

	// No write loop: from the settled state, one change of spec costs exactly one status write.
	writes := watchWrites(t, ns, "selfie", final.ResourceVersion)
	updateGate(t, ns, "selfie", func(g *gatingv1alpha1.Gate) { g.Spec.Message = "poked" })
	waitGate(t, ns, "selfie", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.ObservedGeneration == g.Generation })
	settled(t, ns)
	got := writes(getGate(t, ns, "selfie").ResourceVersion)
	require.Len(t, got, 2, "the person's update and one status write, nothing else: %s", describeWrites(got))
	assert.Equal(t, "poked", got[0].Spec.Message)
	assert.Equal(t, got[0].Generation, got[1].Status.ObservedGeneration)
}

func describeWrites(gs []*gatingv1alpha1.Gate) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "[rv %s generation %d observed %d: %.80s] ", g.ResourceVersion, g.Generation, g.Status.ObservedGeneration, g.Status.Message)
	}
	return b.String()
}

// watchWrites watches a gate from resourceVersion rv. The returned function collects every
// change up to and including the one that produced resourceVersion until: a write the test did
// not cause (a loop) shows as one more change, whenever it happened.
func watchWrites(t *testing.T, ns, name, rv string) func(until string) []*gatingv1alpha1.Gate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	w, err := env.Sluice.GatingV1alpha1().Gates(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + name, ResourceVersion: rv,
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return func(until string) []*gatingv1alpha1.Gate {
		t.Helper()
		var seen []*gatingv1alpha1.Gate
		for e := range w.ResultChan() {
			g, ok := e.Object.(*gatingv1alpha1.Gate)
			require.True(t, ok, "watch event %s: %v", e.Type, e.Object)
			seen = append(seen, g)
			if g.ResourceVersion == until {
				return seen
			}
		}
		t.Fatalf("the watch ended before resourceVersion %s; saw %d changes", until, len(seen))
		return nil
	}
}

func TestACycleOfGatesIsReportedAndHoldsNothing(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	for name, refs := range map[string]string{"a": "b", "b": "a"} {
		g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{gate.GatesAnnotation: refs}},
			Spec: gatingv1alpha1.GateSpec{Closed: true, Message: "closed " + name}}
		_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), g, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	a := waitGate(t, ns, "a", wait, stalledBy(gatingv1alpha1.ReasonGateCycle))
	assert.Contains(t, conditions.Get(a.Status.Conditions, conditions.Stalled).Message, "gates "+ns+"/a -> "+ns+"/b -> "+ns+"/a")
	b := waitGate(t, ns, "b", wait, stalledBy(gatingv1alpha1.ReasonGateCycle))
	assert.Contains(t, conditions.Get(b.Status.Conditions, conditions.Stalled).Message, "gates "+ns+"/b -> "+ns+"/a -> "+ns+"/b")
	settled(t, ns)
	for _, name := range []string{"a", "b"} {
		g := getGate(t, ns, name)
		assert.Equal(t, gatingv1alpha1.ReasonManual, g.Status.Reason, "%s is not suspended by the other", name)
		assert.NotContains(t, g.Annotations, suspend.Annotation)
		assert.Less(t, len(g.Status.Message), 200, "no nested messages")
		assert.Len(t, waitEvent(t, ns, name, gatingv1alpha1.ReasonGateCycle), 1)
	}

	// Breaking the cycle: b still references a, and a holds b as any gate holds its targets.
	updateGate(t, ns, "a", func(g *gatingv1alpha1.Gate) { delete(g.Annotations, gate.GatesAnnotation) })
	waitGate(t, ns, "a", wait, func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Ready) })
	held := waitGate(t, ns, "b", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Reason == gatingv1alpha1.ReasonSuspended })
	assert.Contains(t, held.Status.Message, "gate "+ns+"/a is closed")
}

// A 200 KB suspend reason on a gate is not copied whole into its status nor into the objects it
// holds, and the hold lands.
func TestAHugeSuspendReasonNeverFailsOpen(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{Closed: true})
	waitGate(t, ns, "prod", wait, isClosed)
	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) {
		g.Annotations = map[string]string{suspend.Annotation: strings.Repeat("freeze, ask #platform. ", 9000)}
	})
	g := waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Reason == gatingv1alpha1.ReasonSuspended })
	assert.LessOrEqual(t, len(g.Status.Message), gatestatus.MaxMessage)

	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "prod"}, nil, "kubectl-create")
	// The targets' cache of gates may hold the gate's status from before the suspend for a moment:
	// the hold then says "closed", and is rewritten with the reason once the cache catches up.
	u := waitObject(t, ks, wait, "held with the suspend reason", func(u *unstructured.Unstructured) bool {
		return heldByController(u) && strings.Contains(u.GetAnnotations()[suspend.Annotation], "freeze, ask #platform.")
	})
	assert.LessOrEqual(t, len(u.GetAnnotations()[suspend.Annotation]), hold.MaxReason)
	assert.Empty(t, events(t, ns, "apps")["HoldFailed"])
}

// 20,000 gate names on one target leave no room for the hold's annotations: the target is held
// by spec.suspend alone, and says so, rather than left running.
func TestTwentyThousandGatesOnOneTargetStillHold(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	names := make([]string, 20_000)
	for i := range names {
		names[i] = fmt.Sprintf("gate-%07d", i)
	}
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: strings.Join(names, ",")}, nil, "kubectl-create")
	u := waitObject(t, ks, wait, "held", func(u *unstructured.Unstructured) bool {
		s, _ := specSuspend(u)
		return s
	})
	assert.NotContains(t, u.GetAnnotations(), hold.RecordAnnotation, "the record does not fit, so it is left out")
	msgs := waitEvent(t, ns, "apps", "HoldReduced")
	assert.Contains(t, msgs[0], "held by spec.suspend alone")

	// Once the gates annotation is gone, the hold is released as usual.
	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Patch(context.Background(), "apps", "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+gate.GatesAnnotation+`":null}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitObject(t, ks, wait, "released", released)
}

// kubectl get gates reads HOLDING 0, not blank, for a gate that holds nothing.
func TestKubectlGetGatesShowsHoldingZero(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "idle", gatingv1alpha1.GateSpec{Closed: true})
	waitGate(t, ns, "idle", wait, isClosed)
	kubectl, err := testenv.Tool("kubectl")
	require.NoError(t, err)
	cmd := exec.Command(kubectl, "get", "gate", "idle", "-n", ns)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, "%s", out)
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	require.Equal(t, []string{"NAME", "OPEN", "REASON", "NEXT", "CHANGE", "HOLDING", "APPROVED", "AGE"}, header)
	// NEXT CHANGE is empty for a gate closed by hand, and APPROVED for one that approves nothing,
	// so the row has two fields fewer.
	require.Len(t, row, 5, "%s", out)
	assert.Equal(t, []string{"idle", "false", "Manual", "0"}, row[:4])
}
