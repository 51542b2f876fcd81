package integration

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// Windows that started this minute and end a few seconds from now, in a zone with a half-hour
// offset: when they end, with no edit to anything, the gate behind the open window closes and
// holds its target, and the gate behind the closed window opens and releases its target.
func TestWindowsChangeGatesWithoutAnyEdit(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	now := time.Now().In(kolkata)
	start := now.Truncate(time.Minute)
	end := now.Add(8 * time.Second).Truncate(time.Second)
	window := func(kind gatingv1alpha1.GateState, description string) []gatingv1alpha1.GateWindow {
		return []gatingv1alpha1.GateWindow{{
			Schedule:    fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour()),
			Duration:    metav1.Duration{Duration: end.Sub(start)},
			TimeZone:    "Asia/Kolkata",
			Kind:        kind,
			Description: description,
		}}
	}
	createGate(t, ns, "business-hours", gatingv1alpha1.GateSpec{Windows: window(gatingv1alpha1.StateOpen, "business hours")})
	createGate(t, ns, "maintenance", gatingv1alpha1.GateSpec{Windows: window(gatingv1alpha1.StateClosed, "database maintenance")})
	closing := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "business-hours"}, nil, "kubectl-create")
	opening := createFlux(t, flux.Kustomizations, ns, "db", map[string]string{gate.GatesAnnotation: "maintenance"}, nil, "kubectl-create")

	before := map[string]*gatingv1alpha1.Gate{
		"business-hours": waitGate(t, ns, "business-hours", wait, isOpen),
		"maintenance":    waitGate(t, ns, "maintenance", wait, isClosed),
	}
	for name, g := range before {
		require.NotNil(t, g.Status.NextTransitionTime, name)
		assert.True(t, g.Status.NextTransitionTime.Time.Equal(end), "%s: next change %s, windows end %s", name, g.Status.NextTransitionTime, end)
		assert.Equal(t, gatingv1alpha1.ReasonWindow, g.Status.Reason)
	}
	u := waitObject(t, opening, wait, "held by the maintenance window", heldByController)
	assert.Contains(t, u.GetAnnotations()[suspend.Annotation], "database maintenance")

	closed := waitGate(t, ns, "business-hours", time.Until(end)+wait, isClosed)
	assert.False(t, time.Now().Before(end), "closed no earlier than the window ends")
	assert.Contains(t, closed.Status.Message, "closed outside every open window")
	opened := waitGate(t, ns, "maintenance", time.Until(end)+wait, isOpen)
	assert.Equal(t, gatingv1alpha1.ReasonDefault, opened.Status.Reason, "no window applies any more")
	for _, g := range []*gatingv1alpha1.Gate{closed, opened} {
		assert.Equal(t, before[g.Name].Generation, g.Generation, "%s: nobody edited the gate", g.Name)
		require.Len(t, g.Status.History, 2, g.Name)
		assert.Equal(t, g.Status.Reason, g.Status.History[0].Reason)
		assert.Equal(t, g.Status.Open, g.Status.History[0].State == gatingv1alpha1.StateOpen)
	}
	u = waitObject(t, closing, wait, "held when business hours end", heldByController)
	assert.Contains(t, u.GetAnnotations()[suspend.Annotation], ns+"/business-hours")
	waitObject(t, opening, wait, "released when the maintenance ends", released)
}

func TestKubectlWaitForConditionOpen(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "release", gatingv1alpha1.GateSpec{Closed: true})
	waitGate(t, ns, "release", wait, isClosed)

	kubectl, err := testenv.Tool("kubectl")
	require.NoError(t, err)
	cmd := exec.Command(kubectl, "wait", "--for=condition=Open", "gate/release", "-n", ns, "--timeout=60s")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	out := make(chan []byte, 1)
	errs := make(chan error, 1)
	go func() {
		b, err := cmd.CombinedOutput()
		out <- b
		errs <- err
	}()
	updateGate(t, ns, "release", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	assert.NoError(t, <-errs, "kubectl wait: %s", <-out)
}

func TestSuspendingAGateFreezesItsState(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	waitGate(t, ns, "prod", wait, isOpen)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "prod"}, nil, "kubectl-create")

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) {
		g.Annotations = map[string]string{suspend.Annotation: "audit in progress, ask #platform"}
	})
	waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Reason == gatingv1alpha1.ReasonSuspended })
	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = true })
	frozen := waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return true })
	assert.True(t, frozen.Status.Open, "a suspended gate keeps its state")
	assert.True(t, conditions.IsTrue(frozen.Status.Conditions, gatingv1alpha1.ConditionOpen))
	assert.Contains(t, frozen.Status.Message, "audit in progress, ask #platform")
	c := conditions.Get(frozen.Status.Conditions, conditions.Suspended)
	require.NotNil(t, c)
	assert.Equal(t, "audit in progress, ask #platform", c.Message)
	assert.Nil(t, frozen.Status.NextTransitionTime)
	_, held := get(t, ks).GetAnnotations()[suspend.Annotation]
	assert.False(t, held, "targets of a frozen open gate keep running")

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { delete(g.Annotations, suspend.Annotation) })
	resumed := waitGate(t, ns, "prod", wait, isClosed)
	assert.Equal(t, gatingv1alpha1.ReasonManual, resumed.Status.Reason)
	assert.Nil(t, conditions.Get(resumed.Status.Conditions, conditions.Suspended))
	waitObject(t, ks, wait, "held once the gate is resumed and closed", heldByController)
}

func TestAGateThatCannotBeEvaluatedStallsClosed(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "broken", gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{{
		Schedule: "61 9 * * MON", Duration: metav1.Duration{Duration: time.Hour}, Kind: gatingv1alpha1.StateOpen,
	}}})
	g := waitGate(t, ns, "broken", wait, func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Stalled) })
	assert.False(t, g.Status.Open)
	assert.Equal(t, gatingv1alpha1.ReasonInvalid, g.Status.Reason)
	stalled := conditions.Get(g.Status.Conditions, conditions.Stalled)
	assert.Contains(t, stalled.Message, "spec.windows[0].schedule")
	assert.False(t, conditions.IsTrue(g.Status.Conditions, conditions.Ready))
	waitEvent(t, ns, "broken", "InvalidSpec")

	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "broken"}, nil, "kubectl-create")
	waitObject(t, ks, wait, "held by a gate that cannot be evaluated", heldByController)
}

// An override opens a frozen gate for a few seconds; the controller wakes exactly when it
// expires, closes the gate again and reports the expired override.
func TestAnExpiredOverrideIsReported(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	until := time.Now().Add(4 * time.Second).Truncate(time.Second)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{
		Windows: []gatingv1alpha1.GateWindow{{
			Schedule: "0 0 * * *", Duration: metav1.Duration{Duration: 24 * time.Hour}, Kind: gatingv1alpha1.StateClosed, Description: "freeze",
		}},
		Override: &gatingv1alpha1.GateOverride{State: gatingv1alpha1.StateOpen, Until: metav1.NewTime(until), Message: "hotfix INC-1"},
	})
	g := waitGate(t, ns, "freeze", wait, isOpen)
	assert.Equal(t, gatingv1alpha1.ReasonOverride, g.Status.Reason)
	assert.Contains(t, g.Status.Message, "hotfix INC-1")

	g = waitGate(t, ns, "freeze", time.Until(until)+wait, isClosed)
	assert.Equal(t, gatingv1alpha1.ReasonWindow, g.Status.Reason)
	require.NotNil(t, g.Status.ExpiredOverride)
	assert.Equal(t, "hotfix INC-1", g.Status.ExpiredOverride.Message)
	assert.Contains(t, g.Status.Message, "has expired")
	waitEvent(t, ns, "freeze", "OverrideExpired")

	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Override = nil })
	g = waitGate(t, ns, "freeze", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.ExpiredOverride == nil })
	assert.NotContains(t, g.Status.Message, "expired")
}
