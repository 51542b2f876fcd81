package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/plugin"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv/flux"
)

// kubectlGate runs kubectl-gate in-process against the control plane, in namespace ns.
func kubectlGate(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := plugin.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", env.Kubeconfig, "--namespace", ns}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String() + errOut.String(), err
}

func TestPluginOpensClosesAndListsGates(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	waitGate(t, ns, "prod", wait, isOpen)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "prod"}, nil, "kubectl-create")

	out, err := kubectlGate(t, ns, "close", "prod", "-m", "release 1.4 sign-off pending")
	require.NoError(t, err, out)
	assert.Equal(t, "gate/prod closed (Manual): release 1.4 sign-off pending\n", out)
	waitObject(t, ks, wait, "held", heldByController)

	before := time.Now()
	out, err = kubectlGate(t, ns, "open", "prod", "--for", "1h", "-m", "hotfix INC-123")
	require.Error(t, err, "a manual close beats an override, so the plugin refuses and says how to open it")
	assert.Contains(t, err.Error(), "kubectl gate open prod")
	assert.Empty(t, out)

	out, err = kubectlGate(t, ns, "open", "prod")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/prod open (Default)")
	waitObject(t, ks, wait, "released", released)

	out, err = kubectlGate(t, ns, "close", "prod", "--for", "2h", "-m", "maintenance")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/prod closed (Override): closed by override until")
	g := getGate(t, ns, "prod")
	require.NotNil(t, g.Spec.Override)
	assert.False(t, g.Spec.Closed)
	assert.WithinDuration(t, before.Add(2*time.Hour), g.Spec.Override.Until.Time, time.Minute)
	waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 1 })

	out, err = kubectlGate(t, ns, "list")
	require.NoError(t, err, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"NAME", "STATE", "REASON", "NEXT", "CHANGE", "HOLDING", "MESSAGE"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	assert.Equal(t, []string{"prod", "closed", "Override", "in"}, row[:4])
	assert.Contains(t, lines[1], g.Spec.Override.Until.UTC().Format(time.RFC3339))
	assert.Equal(t, "1", row[6], "holding")

	out, err = kubectlGate(t, ns, "open", "prod", "--for", "1h", "-m", "hotfix INC-123")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/prod open (Override): open by override until")
	assert.Contains(t, out, "hotfix INC-123")
	out, err = kubectlGate(t, ns, "open", "prod", "--for", "30m")
	require.NoError(t, err, out)
	assert.Empty(t, getGate(t, ns, "prod").Spec.Override.Message, "a new override keeps nothing of the old one")

	_, err = kubectlGate(t, ns, "open", "nope")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gate "+ns+"/nope not found")
	_, err = kubectlGate(t, ns, "close", "prod", "--for", "-1h")
	require.Error(t, err)
}

func TestPluginSuspendsAndResumesAnyObjectThroughTheAnnotation(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", nil, nil, "kubectl-create")
	generation := get(t, ks).GetGeneration()

	out, err := kubectlGate(t, ns, "suspend", "ks/apps", "-m", "migrating the database, ask #platform")
	require.NoError(t, err, out)
	assert.Equal(t, "kustomizations.kustomize.toolkit.fluxcd.io/apps suspended: migrating the database, ask #platform\n", out)
	u := get(t, ks)
	assert.Equal(t, "migrating the database, ask #platform", u.GetAnnotations()[suspend.Annotation])
	assert.Equal(t, generation, u.GetGeneration(), "the annotation does not bump the generation")
	_, found := specSuspend(u)
	assert.False(t, found, "spec.suspend is left alone")

	out, err = kubectlGate(t, ns, "resume", "kustomization/apps")
	require.NoError(t, err, out)
	assert.Equal(t, "kustomizations.kustomize.toolkit.fluxcd.io/apps resumed\n", out)
	assert.NotContains(t, get(t, ks).GetAnnotations(), suspend.Annotation)
	out, err = kubectlGate(t, ns, "resume", "kustomization/apps")
	require.NoError(t, err, out)
	assert.Contains(t, out, "nothing to resume")

	// Gates too: suspending a gate freezes it.
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	out, err = kubectlGate(t, ns, "suspend", "gate/prod", "-m", "audit")
	require.NoError(t, err, out)
	waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Reason == gatingv1alpha1.ReasonSuspended })

	_, err = kubectlGate(t, ns, "suspend", "nosuchkind/x")
	require.Error(t, err)
}

// Resuming an object the gates hold overrides the hold, and the plugin says so.
func TestPluginResumeOverridesAHold(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true})
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "freeze"}, nil, "kubectl-create")
	waitObject(t, ks, wait, "held", heldByController)

	out, err := kubectlGate(t, ns, "resume", "ks/apps")
	require.NoError(t, err, out)
	assert.Contains(t, out, "note: it was held by gates")
	u := waitObject(t, ks, wait, "running", func(u *unstructured.Unstructured) bool {
		_, found := specSuspend(u)
		return !found
	})
	assert.NotContains(t, u.GetAnnotations(), suspend.Annotation)
	waitEvent(t, ns, "apps", "HoldOverridden")
}
