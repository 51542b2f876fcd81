package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/gate-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/argocd"
)

// gitSyncPolicy is a sync policy as people write it in git: automated sync with prune and
// self-heal, and sync options.
func gitSyncPolicy() map[string]any {
	return map[string]any{
		"automated":   map[string]any{"prune": true, "selfHeal": true},
		"syncOptions": []any{"CreateNamespace=true", "ServerSideApply=true"},
	}
}

// applicationManifest is an Argo CD Application as its git repository holds it.
func applicationManifest(ns, name string, annotations map[string]string, syncPolicy map[string]any, labels map[string]string) *unstructured.Unstructured {
	spec := map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example.com/shop.git", "path": "deploy", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "shop"},
	}
	if syncPolicy != nil {
		spec["syncPolicy"] = syncPolicy
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": argocd.Applications.GroupVersion().String(), "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	u.SetAnnotations(annotations)
	u.SetLabels(labels)
	return u
}

// createApplication creates the Application as Argo CD syncing an app of apps would, under its
// field manager, and returns it as created: under a closed gate, a GET right after could already
// see the hold.
func createApplication(t *testing.T, u *unstructured.Unstructured) (object, *unstructured.Unstructured) {
	t.Helper()
	created, err := env.Dynamic.Resource(argocd.Applications).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{FieldManager: "argocd-controller"})
	require.NoError(t, err)
	return object{gvr: argocd.Applications, kind: "Application", namespace: u.GetNamespace(), name: u.GetName()}, created
}

func automatedEnabled(u *unstructured.Unstructured) (bool, bool) {
	v, found, _ := unstructured.NestedBool(u.Object, "spec", "syncPolicy", "automated", "enabled")
	return v, found
}

// applicationHeld: automated sync switched off, with the controller's record and reason.
func applicationHeld(u *unstructured.Unstructured) bool {
	enabled, found := automatedEnabled(u)
	_, record := u.GetAnnotations()[hold.RecordAnnotation]
	_, reason := u.GetAnnotations()[suspend.Annotation]
	return found && !enabled && record && reason
}

func specOf(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := json.Marshal(u.Object["spec"])
	require.NoError(t, err)
	return string(b)
}

// assertRestored checks that the Application's spec is exactly as it was before the hold and
// that nothing of the controller's is left on it.
func assertRestored(t *testing.T, o object, before *unstructured.Unstructured) {
	t.Helper()
	u := waitObject(t, o, wait, "released", released)
	assert.JSONEq(t, specOf(t, before), specOf(t, u), "%s: the spec is exactly as it was", o)
	for _, mf := range u.GetManagedFields() {
		assert.NotEqual(t, hold.FieldManager, mf.Manager, "%s: nothing of the controller's is left", o)
	}
}

// A closed gate stops Argo CD's automated sync of an Application by its own switch, and nothing
// else of the sync policy moves; opening the gate gives the Application back exactly as it was,
// whether it had automated sync, had none, or had it switched off already. The AppProject, and
// the sync windows people keep in it, are never written.
func TestClosingAGateHoldsArgoCDApplicationsAndOpeningRestoresThemExactly(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": argocd.AppProjects.GroupVersion().String(), "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": ns},
		"spec": map[string]any{"syncWindows": []any{map[string]any{
			"kind": "deny", "schedule": "0 22 * * *", "duration": "1h", "applications": []any{"*"}, "manualSync": true,
		}}},
	}}
	project, err := env.Dynamic.Resource(argocd.AppProjects).Namespace(ns).Create(ctx, project, metav1.CreateOptions{FieldManager: "argocd-controller"})
	require.NoError(t, err)

	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{})
	waitGate(t, ns, "prod", wait, isOpen)
	refs := map[string]string{gate.GatesAnnotation: "prod"}
	disabled := gitSyncPolicy()
	disabled["automated"] = map[string]any{"enabled": false, "prune": true}
	apps := map[object]*unstructured.Unstructured{}
	for name, policy := range map[string]map[string]any{
		"automated": gitSyncPolicy(),
		"manual":    {"syncOptions": []any{"CreateNamespace=true"}},
		"none":      nil,
		"disabled":  disabled,
	} {
		o, created := createApplication(t, applicationManifest(ns, name, refs, policy, nil))
		apps[o] = created
	}

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) {
		g.Spec.Closed = true
		g.Spec.Message = "release 1.4 sign-off pending"
	})
	for o, before := range apps {
		u := waitObject(t, o, wait, "held", applicationHeld)
		assert.Contains(t, u.GetAnnotations()[suspend.Annotation], "release 1.4 sign-off pending", "%s: the reason is on it", o)
		rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
		require.NoError(t, err)
		assert.ElementsMatch(t, []hold.Change{hold.ChangeAnnotation, hold.ChangeSpec}, rec.Set)
		// Only the switch was added: the rest of the automated policy is the user's, as it was.
		expected := before.DeepCopy()
		require.NoError(t, unstructured.SetNestedField(expected.Object, false, "spec", "syncPolicy", "automated", "enabled"))
		assert.JSONEq(t, specOf(t, expected), specOf(t, u), "%s: nothing but the switch moved", o)
	}
	waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return int(g.Status.Holding) == len(apps) })

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	for o, before := range apps {
		assertRestored(t, o, before)
	}
	disabledApp, _ := automatedEnabled(get(t, object{gvr: argocd.Applications, namespace: ns, name: "disabled"}))
	assert.False(t, disabledApp, "automated sync someone had switched off stays off")
	after, err := env.Dynamic.Resource(argocd.AppProjects).Namespace(ns).Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, project.GetResourceVersion(), after.GetResourceVersion(), "the AppProject and its sync windows were never written")
}

// When git manages the Application, Argo CD syncing the parent app of apps applies the git
// manifest again, by server-side apply or by kubectl's three-way merge patch. Neither touches the
// switch the controller owns, so the hold stays, no one fights over it, and the release still
// restores the git manifest exactly.
func TestArgoCDReapplyingTheApplicationFromGitKeepsTheHold(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{Closed: true})
	manifest := applicationManifest(ns, "shop", map[string]string{gate.GatesAnnotation: "prod"}, gitSyncPolicy(), nil)
	o, before := createApplication(t, manifest.DeepCopy())
	waitObject(t, o, wait, "held", applicationHeld)

	apps := env.Dynamic.Resource(argocd.Applications).Namespace(ns)
	_, err := apps.Apply(ctx, "shop", manifest.DeepCopy(), metav1.ApplyOptions{FieldManager: "argocd-controller", Force: true})
	require.NoError(t, err, "Argo CD's server-side apply of the git manifest")
	patch := []byte(`{"spec":{"syncPolicy":{"automated":{"prune":true,"selfHeal":true}},"source":{"targetRevision":"main"}}}`)
	_, err = apps.Patch(ctx, "shop", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "argocd-controller"})
	require.NoError(t, err, "Argo CD's client-side apply of the git manifest")

	// A new reason makes the controller decide again on the Application as Argo CD left it.
	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Message = "after the re-apply" })
	u := waitObject(t, o, wait, "decided again", func(u *unstructured.Unstructured) bool {
		return strings.Contains(u.GetAnnotations()[suspend.Annotation], "after the re-apply")
	})
	assert.True(t, applicationHeld(u), "still held after Argo CD applied git again")
	rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
	require.NoError(t, err)
	assert.False(t, rec.Yielded, "the re-apply is not mistaken for a person resuming it")
	assert.Empty(t, events(t, ns, "shop")[holdingReasonOverridden])

	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	assertRestored(t, o, before)
}

const holdingReasonOverridden = "HoldOverridden"

// Switching automated sync back on while the gate is closed (the Argo CD UI's "Enable
// Auto-Sync", or git setting enabled: true) is a person's override: the controller lets go, says
// so on the Application, and does not hold it again until its gates open.
func TestTurningAutomatedSyncBackOnOverridesTheHold(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true})
	o, _ := createApplication(t, applicationManifest(ns, "shop", map[string]string{gate.GatesAnnotation: "freeze"}, gitSyncPolicy(), nil))
	waitObject(t, o, wait, "held", applicationHeld)

	patch := []byte(`{"spec":{"syncPolicy":{"automated":{"enabled":true}}}}`)
	_, err := env.Dynamic.Resource(argocd.Applications).Namespace(ns).Patch(ctx, "shop", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "argocd-server"})
	require.NoError(t, err)
	u := waitObject(t, o, wait, "yielded", func(u *unstructured.Unstructured) bool {
		rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
		return err == nil && rec.Yielded
	})
	enabled, _ := automatedEnabled(u)
	assert.True(t, enabled, "the person's choice stands")
	assert.Contains(t, waitEvent(t, ns, "shop", holdingReasonOverridden)[0], "someone resumed it")
}

// A hold survives the controller: stopped while an Application is held, a new controller finds
// its record and ownership on the Application and restores it exactly when the gate opens, with
// nothing of the hold held in memory in between.
func TestAnArgoCDHoldIsReleasedExactlyAfterTheControllerRestarts(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	shard := map[string]string{shardLabel: "argocd-restart"}
	selector := func(o *options.Options) { o.WatchLabelSelector = shardLabel + "=argocd-restart" }
	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{Closed: true}, shard)
	refs := map[string]string{gate.GatesAnnotation: "prod"}
	automated, _ := createApplication(t, applicationManifest(ns, "automated", refs, gitSyncPolicy(), shard))
	none, _ := createApplication(t, applicationManifest(ns, "none", refs, nil, shard))
	before := map[object]*unstructured.Unstructured{automated: get(t, automated), none: get(t, none)}

	stop := startController(t, "gate-controller-argocd-1", env.Config, setup.Config{}, selector)
	for o := range before {
		waitObject(t, o, wait, "held by the first controller", applicationHeld)
	}
	stop()

	// A controller started while the gate stays closed takes the hold over as it is: a new
	// reason reaches the Applications, and they stay held with nothing taken for a resume.
	stop = startController(t, "gate-controller-argocd-2", env.Config, setup.Config{}, selector)
	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Message = "after the restart" })
	for o := range before {
		u := waitObject(t, o, wait, "held with the new reason", func(u *unstructured.Unstructured) bool {
			rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
			return err == nil && strings.Contains(rec.Reason, "after the restart")
		})
		assert.True(t, applicationHeld(u), "%s: still held after a restart", o)
		rec, _ := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
		assert.False(t, rec.Yielded, "%s", o)
	}
	stop()

	// The gate opens while no controller runs; the next one releases exactly.
	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	for o := range before {
		assert.True(t, applicationHeld(get(t, o)), "%s: held until a controller runs", o)
	}
	startController(t, "gate-controller-argocd-3", env.Config, setup.Config{}, selector)
	for o, b := range before {
		assertRestored(t, o, b)
	}
}

// A manual sync during a hold is allowed: Argo CD's API server writes the sync operation on the
// Application (as `argocd app sync` does), and the hold, which turned only automated sync off,
// neither removes the operation nor takes it for a resume. Argo CD runs it, as no deny sync
// window blocks it; the Application stays held for automated sync and self-heal afterwards.
func TestAManualSyncDuringAHoldIsAllowedAndKeepsTheHold(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true})
	o, _ := createApplication(t, applicationManifest(ns, "shop", map[string]string{gate.GatesAnnotation: "freeze"}, gitSyncPolicy(), nil))
	waitObject(t, o, wait, "held", applicationHeld)

	sync := []byte(`{"operation":{"initiatedBy":{"username":"alice"},"sync":{"revision":"main","prune":true}}}`)
	_, err := env.Dynamic.Resource(argocd.Applications).Namespace(ns).Patch(ctx, "shop", types.MergePatchType, sync, metav1.PatchOptions{FieldManager: "argocd-server"})
	require.NoError(t, err)
	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Message = "after the manual sync" })
	u := waitObject(t, o, wait, "decided again", func(u *unstructured.Unstructured) bool {
		return strings.Contains(u.GetAnnotations()[suspend.Annotation], "after the manual sync")
	})
	user, _, _ := unstructured.NestedString(u.Object, "operation", "initiatedBy", "username")
	assert.Equal(t, "alice", user, "the manual sync is left for Argo CD to run")
	assert.True(t, applicationHeld(u), "automated sync stays off")
	rec, err := hold.ParseRecord(u.GetAnnotations()[hold.RecordAnnotation])
	require.NoError(t, err)
	assert.False(t, rec.Yielded)
}
