package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/gatecli"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// kubectlGate runs kubectl-gate in-process against the control plane, in namespace ns.
func kubectlGate(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := gatecli.NewAliasCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
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

	out, err = kubectlGate(t, ns, "open", "prod")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/prod open (Default)")
	waitObject(t, ks, wait, "released", released)

	before := time.Now()
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
	g = getGate(t, ns, "prod")
	require.NotNil(t, g.Spec.Override.Replaces, "the new override records the one it replaced")
	assert.Equal(t, "maintenance", g.Spec.Override.Replaces.Overrides[0].Message)

	out, err = kubectlGate(t, ns, "open", "nope")
	require.Error(t, err)
	assert.Equal(t, gatecli.ExitFailed, gatecli.ExitCode(err))
	assert.Contains(t, out, "gate "+ns+"/nope not found; list gates with `kubectl gate list -n "+ns+"`", "the hint keeps the namespace")
	_, err = kubectlGate(t, ns, "close", "prod", "--for", "-1h")
	require.Error(t, err)
	assert.Equal(t, gatecli.ExitUsage, gatecli.ExitCode(err))
}

// The on-call's story: a gate closed by hand is opened for a moment with one command, and is
// closed by hand again when the moment ends, without anyone coming back to it.
func TestPluginBypassOfAManualCloseEndsClosedByHand(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "bypass", gatingv1alpha1.GateSpec{Closed: true, Message: "release 1.4 sign-off pending"})
	waitGate(t, ns, "bypass", wait, isClosed)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "bypass"}, nil, "kubectl-create")
	waitObject(t, ks, wait, "held", heldByController)

	out, err := kubectlGate(t, ns, "open", "bypass", "--for", "4s", "-m", "hotfix INC-123")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/bypass open (Override): open by override until")
	waitObject(t, ks, wait, "released for the bypass", released)
	g := getGate(t, ns, "bypass")
	assert.True(t, g.Spec.Closed, "spec.closed is left as it was: the override says it bypasses it")

	g = waitGate(t, ns, "bypass", time.Until(g.Spec.Override.Until.Time)+wait, isClosed)
	assert.Equal(t, gatingv1alpha1.ReasonManual, g.Status.Reason)
	assert.Contains(t, g.Status.Message, "release 1.4 sign-off pending")
	waitObject(t, ks, wait, "held again once the bypass ends", heldByController)
}

// close --for a long time, then open --for a moment: the moment's end restores the first
// override, not the gate's default.
func TestPluginOverrideExpiryRestoresTheOverrideItReplaced(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	waitGate(t, ns, "prod", wait, isOpen)
	out, err := kubectlGate(t, ns, "close", "prod", "--for", "8000h", "-m", "migration")
	require.NoError(t, err, out)
	out, err = kubectlGate(t, ns, "open", "prod", "--for", "3s", "-m", "one deploy")
	require.NoError(t, err, out)
	assert.Contains(t, out, "open (Override)")
	until := getGate(t, ns, "prod").Spec.Override.Until.Time
	g := waitGate(t, ns, "prod", time.Until(until)+wait, isClosed)
	assert.Equal(t, gatingv1alpha1.ReasonOverride, g.Status.Reason)
	assert.Contains(t, g.Status.Message, "migration")
}

// With no gate-controller evaluating the gate, the change is applied and the plugin says so,
// with its own exit code, instead of a client error.
func TestPluginSaysAppliedButNotConfirmedWhenTheControllerIsDown(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	// The shared controller ignores objects with the shard label, and no other runs here.
	createGate(t, ns, "orphan", gatingv1alpha1.GateSpec{}, map[string]string{shardLabel: "nobody"})
	out, err := kubectlGate(t, ns, "close", "orphan", "-m", "freeze", "--wait", "1500ms")
	require.Error(t, err)
	assert.Equal(t, gatecli.ExitUnconfirmed, gatecli.ExitCode(err), out)
	assert.Contains(t, out, "gate/orphan applied, but not yet confirmed: the gate-controller has not evaluated it within 1.5s")
	assert.NotContains(t, out, "rate limiter")
	assert.True(t, getGate(t, ns, "orphan").Spec.Closed, "the change is applied")

	out, err = kubectlGate(t, ns, "open", "orphan", "--wait", "0")
	require.NoError(t, err, out)
	assert.Contains(t, out, "not waiting")
}

func TestPluginSelectsGatesWithAllAndLabels(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "a", gatingv1alpha1.GateSpec{}, map[string]string{"team": "payments"})
	createGate(t, ns, "b", gatingv1alpha1.GateSpec{}, map[string]string{"team": "payments"})
	createGate(t, ns, "c", gatingv1alpha1.GateSpec{})
	out, err := kubectlGate(t, ns, "close", "-l", "team=payments", "-m", "incident")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/a closed (Manual): incident")
	assert.Contains(t, out, "gate/b closed (Manual): incident")
	assert.False(t, getGate(t, ns, "c").Spec.Closed)

	out, err = kubectlGate(t, ns, "list", "-l", "team=payments", "-o", "json")
	require.NoError(t, err, out)
	var list gatingv1alpha1.GateList
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	assert.Equal(t, "GateList", list.Kind)
	require.Len(t, list.Items, 2)
	out, err = kubectlGate(t, ns, "list", "-o", "yaml")
	require.NoError(t, err, out)
	assert.Contains(t, out, "kind: GateList")
	assert.Contains(t, out, "name: c")

	out, err = kubectlGate(t, ns, "open", "--all")
	require.NoError(t, err, out)
	assert.Equal(t, 3, strings.Count(out, "open (Default)"), out)
	_, err = kubectlGate(t, ns, "open", "a", "--all")
	assert.Equal(t, gatecli.ExitUsage, gatecli.ExitCode(err))
	_, err = kubectlGate(t, ns, "list", "-o", "table")
	assert.Equal(t, gatecli.ExitUsage, gatecli.ExitCode(err))
	out, err = kubectlGate(t, ns, "list", "-o", "wide")
	require.NoError(t, err, out)
	assert.Contains(t, out, "LAST CHANGE")
}

// Flux does not implement RFC-0006 yet: on Flux kinds the plugin sets spec.suspend, with the
// reason in the annotation, as the gate-controller's hold does.
func TestPluginSuspendsFluxKindsBySpecWithTheReasonInTheAnnotation(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", nil, nil, "kubectl-create")

	out, err := kubectlGate(t, ns, "suspend", "ks/apps", "-m", "migrating the database, ask #platform")
	require.NoError(t, err, out)
	assert.Equal(t, "kustomizations.kustomize.toolkit.fluxcd.io/apps suspended (spec.suspend and the annotation): migrating the database, ask #platform\n", out)
	u := get(t, ks)
	assert.Equal(t, "migrating the database, ask #platform", u.GetAnnotations()[suspend.Annotation])
	s, _ := specSuspend(u)
	assert.True(t, s, "Flux honours spec.suspend")

	out, err = kubectlGate(t, ns, "resume", "kustomization/apps")
	require.NoError(t, err, out)
	assert.Equal(t, "kustomizations.kustomize.toolkit.fluxcd.io/apps resumed (removed the reconcile.fluxcd.io/suspended annotation and spec.suspend)\n", out)
	assert.True(t, released(get(t, ks)))
	out, err = kubectlGate(t, ns, "resume", "kustomization/apps")
	require.NoError(t, err, out)
	assert.Contains(t, out, "nothing to resume")

	// Sluice kinds honour the annotation, which does not bump the generation.
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	generation := waitGate(t, ns, "prod", wait, isOpen).Generation
	out, err = kubectlGate(t, ns, "suspend", "gate/prod", "-m", "audit")
	require.NoError(t, err, out)
	assert.Contains(t, out, "suspended (the annotation): audit")
	g := waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Reason == gatingv1alpha1.ReasonSuspended })
	assert.Equal(t, generation, g.Generation)
	assert.False(t, g.Spec.Suspend)
	out, err = kubectlGate(t, ns, "resume", "gate/prod", "--wait")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gates.gating.sluice.dev/prod is running")

	_, err = kubectlGate(t, ns, "suspend", "nosuchkind/x")
	require.Error(t, err)
	_, err = kubectlGate(t, ns, "suspend", "ks")
	assert.Equal(t, gatecli.ExitUsage, gatecli.ExitCode(err), "a kind alone needs --all or -l")
}

func TestPluginSuspendsAndResumesObjectsSelectedByLabel(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	team := map[string]string{"team": "payments"}
	a := createFlux(t, flux.Kustomizations, ns, "a", nil, nil, "kubectl-create", team)
	b := createFlux(t, flux.Kustomizations, ns, "b", nil, nil, "kubectl-create", team)
	other := createFlux(t, flux.Kustomizations, ns, "other", nil, nil, "kubectl-create")

	out, err := kubectlGate(t, ns, "suspend", "kustomizations", "-l", "team=payments", "-m", "incident")
	require.NoError(t, err, out)
	for _, o := range []object{a, b} {
		s, _ := specSuspend(get(t, o))
		assert.True(t, s, o.String())
	}
	assert.True(t, released(get(t, other)))

	out, err = kubectlGate(t, ns, "resume", "kustomizations", "--all", "--wait=20s")
	require.NoError(t, err, out)
	assert.Equal(t, 2, strings.Count(out, " is running"), out)
	assert.Contains(t, out, "other has no reconcile.fluxcd.io/suspended annotation")
}

// Resuming an object the gates hold overrides the hold; the plugin says so and, with --wait,
// returns once the gate-controller has let go.
func TestPluginResumeOverridesAHold(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true})
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "freeze"}, nil, "kubectl-create")
	waitObject(t, ks, wait, "held", heldByController)

	out, err := kubectlGate(t, ns, "resume", "ks/apps", "--wait=20s")
	require.NoError(t, err, out)
	assert.Contains(t, out, "note: it was held by gates")
	assert.Contains(t, out, "is running")
	u := get(t, ks)
	_, found := specSuspend(u)
	assert.False(t, found)
	assert.NotContains(t, u.GetAnnotations(), suspend.Annotation)
	rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
	require.NoError(t, err)
	assert.True(t, rec.Yielded, "--wait returned after the gate-controller let go")
	waitEvent(t, ns, "apps", "HoldOverridden")
}

// Item 6: a person suspending an object while a gate holds it keeps it suspended after the gate
// releases. kubectl gate suspend co-owns spec.suspend, which a plain patch of the same value
// cannot (the API server records no change), so the plugin is the documented way.
func TestPluginSuspendWhileHeldOutlivesTheHold(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true})
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "freeze"}, nil, "kubectl-create")
	waitObject(t, ks, wait, "held", heldByController)

	out, err := kubectlGate(t, ns, "suspend", "ks/apps", "-m", "database migration, ask #platform")
	require.NoError(t, err, out)
	out, err = kubectlGate(t, ns, "open", "freeze")
	require.NoError(t, err, out)
	u := waitObject(t, ks, wait, "released by the gate", func(u *unstructured.Unstructured) bool {
		_, record := u.GetAnnotations()[hold.RecordAnnotation]
		return !record
	})
	s, _ := specSuspend(u)
	assert.True(t, s, "the person's suspension outlives the gate's")
	assert.Equal(t, "database migration, ask #platform", u.GetAnnotations()[suspend.Annotation])
}
