package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv/flux"
)

const wait = 20 * time.Second

func heldByController(u *unstructured.Unstructured) bool {
	s, _ := specSuspend(u)
	_, record := u.GetAnnotations()[hold.RecordAnnotation]
	return s && record
}

func released(u *unstructured.Unstructured) bool {
	_, found := specSuspend(u)
	annotations := u.GetAnnotations()
	_, record := annotations[hold.RecordAnnotation]
	_, suspended := annotations[suspend.Annotation]
	return !found && !record && !suspended
}

func TestClosingAGateHoldsFluxObjectsWithTheReasonAndOpeningReleasesThem(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	waitGate(t, ns, "prod", wait, isOpen)
	refs := map[string]string{gate.GatesAnnotation: "prod"}
	ks := createFlux(t, flux.Kustomizations, ns, "apps", refs, nil, "kubectl-create")
	repo := createFlux(t, flux.GitRepositories, ns, "repo", refs, nil, "kubectl-create")
	// Not a target: no annotation, so the controller leaves it alone.
	bystander := createFlux(t, flux.Kustomizations, ns, "bystander", nil, nil, "kubectl-create")
	generation := get(t, ks).GetGeneration()

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) {
		g.Spec.Closed = true
		g.Spec.Message = "release 1.4 sign-off pending"
	})
	for _, o := range []object{ks, repo} {
		u := waitObject(t, o, wait, "held", heldByController)
		reason := u.GetAnnotations()[suspend.Annotation]
		assert.Contains(t, reason, ns+"/prod", "%s: the reason names the gate", o)
		assert.Contains(t, reason, "release 1.4 sign-off pending", "%s: the reason says why", o)
		rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
		require.NoError(t, err)
		assert.Equal(t, []string{ns + "/prod"}, rec.Gates)
		assert.ElementsMatch(t, []hold.Change{hold.ChangeAnnotation, hold.ChangeSpec}, rec.Set)
	}
	g := waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 2 })
	assert.ElementsMatch(t, []gatingv1alpha1.HeldObject{
		{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: ns, Name: "apps"},
		{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "GitRepository", Namespace: ns, Name: "repo"},
	}, g.Status.Held)
	assert.Equal(t, gatingv1alpha1.ReasonManual, g.Status.Reason)
	waitEvent(t, ns, "prod", "Closed")
	// One Event on the gate for the objects it holds, none on each object.
	holding := waitEvent(t, ns, "prod", "Holding")
	require.Len(t, holding, 1)
	assert.Contains(t, holding[0], "holds 2 objects")
	for _, o := range []object{ks, repo} {
		assert.Empty(t, events(t, ns, o.name))
	}

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	for _, o := range []object{ks, repo} {
		waitObject(t, o, wait, "released", released)
	}
	waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 0 && len(g.Status.Held) == 0 })
	assert.Contains(t, waitEvent(t, ns, "prod", "Released")[0], "holds 0 objects, 2 released")
	// Holding and releasing changed spec.suspend twice; nothing else of the spec moved.
	assert.Equal(t, generation+2, get(t, ks).GetGeneration())
	assert.Empty(t, get(t, bystander).GetAnnotations())
	for _, mf := range get(t, ks).GetManagedFields() {
		assert.NotEqual(t, hold.FieldManager, mf.Manager, "nothing of the controller's is left on the object")
	}
}

func TestAnObjectSuspendedByAPersonIsNeverResumedByTheController(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true})
	waitGate(t, ns, "freeze", wait, isClosed)

	// Suspended by a person both ways before the gate got to it.
	both := createFlux(t, flux.Kustomizations, ns, "both", map[string]string{
		gate.GatesAnnotation: "freeze", suspend.Annotation: "database migration, ask #platform",
	}, map[string]any{"suspend": true}, "flux")
	// Suspended by a person through spec.suspend only, the way `flux suspend` does it today.
	bySpec := createFlux(t, flux.Kustomizations, ns, "by-spec", map[string]string{gate.GatesAnnotation: "freeze"},
		map[string]any{"suspend": true}, "flux")

	u := waitObject(t, both, wait, "recorded as held", func(u *unstructured.Unstructured) bool {
		_, ok := u.GetAnnotations()[hold.RecordAnnotation]
		return ok
	})
	assert.Equal(t, "database migration, ask #platform", u.GetAnnotations()[suspend.Annotation], "the person's reason is kept")
	rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
	require.NoError(t, err)
	assert.Equal(t, []hold.Change{hold.ChangeSpec}, rec.Set, "the controller did not take over the person's annotation")
	waitObject(t, bySpec, wait, "held with the gate's reason", func(u *unstructured.Unstructured) bool {
		return heldByController(u) && u.GetAnnotations()[suspend.Annotation] != ""
	})

	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	u = waitObject(t, both, wait, "hold record removed", func(u *unstructured.Unstructured) bool {
		_, ok := u.GetAnnotations()[hold.RecordAnnotation]
		return !ok
	})
	s, _ := specSuspend(u)
	assert.True(t, s, "spec.suspend set by the person stays true")
	assert.Equal(t, "database migration, ask #platform", u.GetAnnotations()[suspend.Annotation])

	u = waitObject(t, bySpec, wait, "gate's annotation removed", func(u *unstructured.Unstructured) bool {
		_, suspended := u.GetAnnotations()[suspend.Annotation]
		return !suspended
	})
	s, _ = specSuspend(u)
	assert.True(t, s, "spec.suspend set by the person stays true after the gate opens")
}

func TestAPersonResumingAHeldObjectWinsUntilTheGatesOpen(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true})
	ks := createFlux(t, flux.Kustomizations, ns, "hotfix", map[string]string{gate.GatesAnnotation: "freeze"}, nil, "kubectl-create")
	waitObject(t, ks, wait, "held", heldByController)

	// `flux resume` sets spec.suspend to false with a merge patch.
	patch := []byte(`{"spec":{"suspend":false}}`)
	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Patch(context.Background(), "hotfix", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "flux"})
	require.NoError(t, err)
	u := waitObject(t, ks, wait, "yielded", func(u *unstructured.Unstructured) bool {
		rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
		return err == nil && rec.Yielded
	})
	_, suspended := u.GetAnnotations()[suspend.Annotation]
	assert.False(t, suspended, "the controller gave up its own annotation too")
	s, _ := specSuspend(u)
	assert.False(t, s, "the person's resume stands")
	waitEvent(t, ns, "hotfix", "HoldOverridden")
	waitGate(t, ns, "freeze", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 0 })

	// A later change of the gate's message does not bring the hold back.
	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Message = "still frozen" })
	waitObject(t, ks, wait, "record follows the new reason", func(u *unstructured.Unstructured) bool {
		rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
		return err == nil && rec.Yielded && strings.Contains(rec.Reason, "still frozen")
	})
	s, _ = specSuspend(get(t, ks))
	assert.False(t, s)

	// Once the gate opens, the next close holds it again.
	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	waitObject(t, ks, wait, "record cleared", func(u *unstructured.Unstructured) bool {
		_, ok := u.GetAnnotations()[hold.RecordAnnotation]
		return !ok
	})
	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = true })
	waitObject(t, ks, wait, "held again", heldByController)
}

func TestAMissingGateHoldsItsTargets(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "typo-gate"}, nil, "kubectl-create")
	u := waitObject(t, ks, wait, "held", heldByController)
	assert.Contains(t, u.GetAnnotations()[suspend.Annotation], "gate "+ns+"/typo-gate does not exist")
	assert.Contains(t, waitEvent(t, ns, "apps", "GateMissing")[0], ns+"/typo-gate")

	createGate(t, ns, "typo-gate", gatingv1alpha1.GateSpec{})
	waitObject(t, ks, wait, "released once the gate exists and is open", released)
}

func TestAnUnreadableGatesAnnotationHolds(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "a/b/c"}, nil, "kubectl-create")
	u := waitObject(t, ks, wait, "held", heldByController)
	assert.Contains(t, u.GetAnnotations()[suspend.Annotation], gate.GatesAnnotation)
	waitEvent(t, ns, "apps", "InvalidGates")
}

// RFC story: a change freeze gate and a bypass sign-off gate, require oneOf.
func TestOneOfLetsABypassGateOverrideAFreeze(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "change-freeze", gatingv1alpha1.GateSpec{Closed: true, Message: "end-of-quarter freeze"})
	createGate(t, ns, "bypass-signoff", gatingv1alpha1.GateSpec{Closed: true})
	repo := createFlux(t, flux.GitRepositories, ns, "flux-system", map[string]string{
		gate.GatesAnnotation: "change-freeze,bypass-signoff", gate.RequireAnnotation: "oneOf",
	}, nil, "kubectl-create")
	u := waitObject(t, repo, wait, "held while both are closed", heldByController)
	assert.Contains(t, u.GetAnnotations()[suspend.Annotation], "no gate is open (oneOf)")

	updateGate(t, ns, "bypass-signoff", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	waitObject(t, repo, wait, "released by the sign-off", released)
	updateGate(t, ns, "bypass-signoff", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = true })
	waitObject(t, repo, wait, "held again when the sign-off closes", heldByController)
	updateGate(t, ns, "change-freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	waitObject(t, repo, wait, "released when the freeze ends", released)
}

func TestEditingAnOpenGateDoesNotHoldItsTargets(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	waitGate(t, ns, "prod", wait, isOpen)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "prod"}, nil, "kubectl-create")
	for i := range 5 {
		updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Message = "edit " + string(rune('a'+i)) })
	}
	// An open gate shows no spec.message; waitGate waits until the last edit is evaluated.
	waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Spec.Message == "edit e" && g.Status.Open })
	// The controller wrote nothing to the target: an apply would leave a managedFields entry.
	for _, mf := range get(t, ks).GetManagedFields() {
		assert.NotEqual(t, hold.FieldManager, mf.Manager)
	}
	assert.Empty(t, events(t, ns, "prod")["Holding"])
	assert.Equal(t, int64(1), get(t, ks).GetGeneration())
}
