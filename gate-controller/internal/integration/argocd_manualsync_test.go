package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/hold"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/argocd"
	"github.com/sluicehq/sluice/testenv/charts"
)

var (
	admissionPolicies = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	policyBindings    = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

// installManualSyncPolicy creates the chart's ValidatingAdmissionPolicy and its binding, rendered
// from this checkout's chart, and removes them when the test ends.
func installManualSyncPolicy(t *testing.T, release string) {
	t.Helper()
	ctx := context.Background()
	helm, err := charts.NewHelm(env)
	require.NoError(t, err)
	t.Cleanup(func() { _ = helm.Close() })
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	rendered, err := helm.Template(ctx, release, "sluice-system", filepath.Join(root, "charts", "gate-controller"), nil, "crds.enabled=false")
	require.NoError(t, err)
	objs, err := charts.Objects(rendered)
	require.NoError(t, err)
	for kind, gvr := range map[string]schema.GroupVersionResource{"ValidatingAdmissionPolicy": admissionPolicies, "ValidatingAdmissionPolicyBinding": policyBindings} {
		found := charts.OfKind(objs, kind)
		require.Len(t, found, 1, "the chart renders one %s while Argo CD Applications are a target", kind)
		_, err := env.Dynamic.Resource(gvr).Create(ctx, found[0], metav1.CreateOptions{})
		require.NoError(t, err)
		name := found[0].GetName()
		t.Cleanup(func() { _ = env.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

// startSync writes an operation on the Application, as argocd-server does for a manual sync.
func startSync(ns, name, user string) error {
	patch := []byte(`{"operation":{"initiatedBy":{"username":"` + user + `"},"sync":{"revision":"main"}}}`)
	_, err := env.Dynamic.Resource(argocd.Applications).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "argocd-server"})
	return err
}

// A gate with spec.manualSyncs: Deny marks the Applications it holds, and the chart's admission
// policy refuses a manual sync of them with the gate's reason. Switching the gate to Allow, or
// opening it, takes the mark away, and a manual sync goes through again; an Application held by a
// gate that allows manual syncs never carries the mark.
func TestAGateThatDeniesManualSyncsRefusesThemAtTheAPIServer(t *testing.T) {
	sharedController(t)
	t.Parallel()
	installManualSyncPolicy(t, "manual-syncs")
	ns := newNamespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{Closed: true, Message: "quarter close", ManualSyncs: gatingv1alpha1.ManualSyncsDeny})
	createGate(t, ns, "soft", gatingv1alpha1.GateSpec{Closed: true})
	denied, _ := createApplication(t, applicationManifest(ns, "shop", map[string]string{gate.GatesAnnotation: "freeze"}, gitSyncPolicy(), nil))
	allowed, _ := createApplication(t, applicationManifest(ns, "blog", map[string]string{gate.GatesAnnotation: "soft"}, gitSyncPolicy(), nil))

	marked := func(u *unstructured.Unstructured) bool {
		return applicationHeld(u) && u.GetAnnotations()[hold.ManualSyncsAnnotation] == hold.ManualSyncsDeny
	}
	waitObject(t, denied, wait, "held and marked", marked)
	u := waitObject(t, allowed, wait, "held", applicationHeld)
	assert.NotContains(t, u.GetAnnotations(), hold.ManualSyncsAnnotation, "a gate that allows manual syncs does not mark what it holds")

	// The API server loads a new policy within a second or so: a sync let through before then is
	// taken back, so the refusal is read from the first attempt it answers with one.
	var refusal error
	require.Eventually(t, func() bool {
		refusal = startSync(ns, "shop", "mallory")
		if refusal == nil {
			_, _ = env.Dynamic.Resource(argocd.Applications).Namespace(ns).Patch(context.Background(), "shop", types.MergePatchType, []byte(`{"operation":null}`), metav1.PatchOptions{FieldManager: "argocd-controller"})
		}
		return refusal != nil
	}, wait, 200*time.Millisecond, "a manual sync of an Application held by a gate that denies them is refused")
	assert.True(t, apierrors.IsForbidden(refusal), "refused as Forbidden: %v", refusal)
	assert.Contains(t, refusal.Error(), "quarter close", "the refusal gives the hold's reason")
	assert.NotContains(t, get(t, denied).Object, "operation", "no sync was started")
	require.NoError(t, startSync(ns, "blog", "alice"), "a gate that allows manual syncs lets one through")

	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.ManualSyncs = gatingv1alpha1.ManualSyncsAllow })
	u = waitObject(t, denied, wait, "unmarked", func(u *unstructured.Unstructured) bool {
		_, mark := u.GetAnnotations()[hold.ManualSyncsAnnotation]
		return applicationHeld(u) && !mark
	})
	require.NoError(t, startSync(ns, "shop", "alice"), "once the gate allows manual syncs, one goes through")
	user, _, _ := unstructured.NestedString(get(t, denied).Object, "operation", "initiatedBy", "username")
	assert.Equal(t, "alice", user)

	// Deny again while a sync is in flight: the controller's own update of the Application is
	// not a new sync, and is let through; opening the gate releases everything.
	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.ManualSyncs = gatingv1alpha1.ManualSyncsDeny })
	waitObject(t, denied, wait, "marked again with a sync in flight", marked)
	updateGate(t, ns, "freeze", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	waitObject(t, denied, wait, "released and unmarked", func(u *unstructured.Unstructured) bool {
		_, mark := u.GetAnnotations()[hold.ManualSyncsAnnotation]
		return released(u) && !mark && !strings.Contains(u.GetAnnotations()[hold.RecordAnnotation], "denyManualSyncs")
	})
}
