package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/gatecli"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

var gatesResource = gatingv1alpha1.SchemeGroupVersion.WithResource("gates")

// An override that expires at the zero time used to be admitted, and then every status write
// failed (status.expiredOverride.until: Required value). The CRD now refuses it, as it is
// written, in words a person can act on.
func TestZeroOverrideExpiryIsRejectedAtAdmission(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gatingv1alpha1.SchemeGroupVersion.String(), "kind": "Gate",
		"metadata": map[string]any{"name": "zero", "namespace": ns},
		"spec": map[string]any{"override": map[string]any{
			"state": "open", "until": "0001-01-01T00:00:00Z",
			"replaces": map[string]any{"overrides": []any{map[string]any{"state": "closed", "until": "2030-01-01T00:00:00Z"}}},
		}},
	}}
	_, err := env.Dynamic.Resource(gatesResource).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "the zero time 0001-01-01T00:00:00Z is not an expiry")

	// A replaced override at the zero time is refused the same way.
	u.Object["spec"] = map[string]any{"override": map[string]any{
		"state": "open", "until": "2030-01-01T00:00:00Z",
		"replaces": map[string]any{"overrides": []any{map[string]any{"state": "closed", "until": "0001-01-01T00:00:00Z"}}},
	}}
	_, err = env.Dynamic.Resource(gatesResource).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.override.replaces.overrides[0].until")
}

// Closed with a message, then opened by setting closed: false alone: the open gate's status,
// `kubectl gate list` and its Opened Event do not repeat the close's message.
func TestOpenedGateDoesNotRepeatTheClosesMessage(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{Closed: true, Message: "freeze2"})
	g := waitGate(t, ns, "prod", wait, isClosed)
	assert.Contains(t, g.Status.Message, "freeze2")

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	g = waitGate(t, ns, "prod", wait, isOpen)
	assert.Equal(t, "freeze2", g.Spec.Message, "the spec keeps what the person wrote")
	assert.NotContains(t, g.Status.Message, "freeze2")

	out, err := kubectlGate(t, ns, "list")
	require.NoError(t, err, out)
	assert.Contains(t, out, "open")
	assert.NotContains(t, out, "freeze2")

	opened := waitEvent(t, ns, "prod", "Opened")
	for _, message := range opened {
		assert.NotContains(t, message, "freeze2")
	}
}

// `kubectl explain` shows every paragraph of the rules whole: no description breaks off.
func TestExplainShowsWholeDescriptions(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	kubectl, err := testenv.Tool("kubectl")
	require.NoError(t, err)
	for field, want := range map[string][]string{
		"gate.spec":          {"then the gate is closed by hand again", "Rule 6: otherwise: open (reason Default)."},
		"gate.spec.override": {"fills", "replaces from the gate as it was."},
		"gate.spec.windows":  {"a window whose whole span is skipped does not open that day", "happens the first time the clock shows it"},
	} {
		cmd := exec.Command(kubectl, "explain", field)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		flat := strings.Join(strings.Fields(string(out)), " ")
		for _, w := range want {
			assert.Contains(t, flat, w, "kubectl explain %s", field)
		}
	}
}

// -A works on every verb that selects: close and open gates by label across namespaces, and
// suspend without -m writes a sentence, not "true".
func TestPluginSelectsAcrossNamespacesAndSuspendsWithADefaultReason(t *testing.T) {
	sharedController(t)
	t.Parallel()
	a, b := newNamespace(t), newNamespace(t)
	team := map[string]string{"team": a}
	createGate(t, a, "prod", gatingv1alpha1.GateSpec{}, team)
	createGate(t, b, "prod", gatingv1alpha1.GateSpec{}, team)
	createGate(t, b, "other", gatingv1alpha1.GateSpec{})

	out, err := kubectlGate(t, a, "close", "-A", "-l", "team="+a, "-m", "incident INC-123")
	require.NoError(t, err, out)
	assert.Contains(t, out, a+" gate/prod closed (Manual): incident INC-123")
	assert.Contains(t, out, b+" gate/prod closed (Manual): incident INC-123")
	assert.False(t, getGate(t, b, "other").Spec.Closed, "the selector picks only the labelled gates")

	out, err = kubectlGate(t, a, "list", "-A", "-l", "team="+a, "-o", "name")
	require.NoError(t, err, out)
	assert.Equal(t, "gate.gating.sluice.dev/prod\ngate.gating.sluice.dev/prod\n", out)

	out, err = kubectlGate(t, a, "open", "-A", "-l", "team="+a)
	require.NoError(t, err, out)
	waitGate(t, a, "prod", wait, isOpen)
	waitGate(t, b, "prod", wait, isOpen)

	ks := createFlux(t, flux.Kustomizations, b, "apps", nil, nil, "kubectl-create", team)
	out, err = kubectlGate(t, a, "suspend", "-A", "kustomizations", "-l", "team="+a)
	require.NoError(t, err, out)
	assert.Contains(t, out, b+" kustomizations.kustomize.toolkit.fluxcd.io/apps suspended")
	u := get(t, ks)
	assert.Equal(t, gatecli.DefaultSuspendReason, u.GetAnnotations()[suspend.Annotation])
}
