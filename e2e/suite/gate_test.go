package suite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// suspendedAnnotation carries the reason of a hold on a Flux object (RFC-0006).
const suspendedAnnotation = "reconcile.fluxcd.io/suspended"

// gateHoldsAKustomization: Flux's CRDs appear while the gate-controller pod runs; a closed Gate
// holds a Kustomization that names it (spec.suspend and the reason), and opening it releases the
// Kustomization exactly. The pod does it under its chart's RBAC.
func (c *Cluster) gateHoldsAKustomization(t *testing.T) {
	ctx := context.Background()
	ns := c.namespace(t, "e2e-gates")
	paths, err := flux.CRDPaths()
	require.NoError(t, err)
	require.NoError(t, c.Env.InstallCRDPaths(paths...))

	gates := c.Sluice.GatingV1alpha1().Gates(ns)
	_, err = gates.Create(ctx, &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec:       gatingv1alpha1.GateSpec{Closed: true, Message: "release sign-off pending"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	kustomizations := c.Dynamic.Resource(flux.Kustomizations).Namespace(ns)
	_, err = kustomizations.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata": map[string]any{
			"name":        "web",
			"annotations": map[string]any{gate.GatesAnnotation: "prod"},
		},
		"spec": map[string]any{
			"interval": "10m", "path": "./deploy", "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "web"},
		},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		k, err := kustomizations.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		suspended, _, _ := unstructured.NestedBool(k.Object, "spec", "suspend")
		return suspended && k.GetAnnotations()[suspendedAnnotation] != "", nil
	}, "the closed gate holds the Kustomization\n%s", lazy(func() string { return c.controllerLogs("gate-controller") }))
	testenv.WaitForObject(t, time.Minute, gates, "prod", func(g *gatingv1alpha1.Gate) bool { return !g.Status.Open && g.Status.Holding == 1 })

	_, err = testenv.Update(ctx, gates, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	require.NoError(t, err)
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		k, err := kustomizations.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		suspended, _, _ := unstructured.NestedBool(k.Object, "spec", "suspend")
		_, held := k.GetAnnotations()[suspendedAnnotation]
		return !suspended && !held, nil
	}, "the open gate releases the Kustomization")
	testenv.WaitForObject(t, time.Minute, gates, "prod", func(g *gatingv1alpha1.Gate) bool { return g.Status.Open && g.Status.Holding == 0 })
}
