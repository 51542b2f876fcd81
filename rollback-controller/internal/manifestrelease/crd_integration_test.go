package manifestrelease_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// crd renders a namespaced CRD for kind in group, serving versions; the last one is stored.
func crd(group, kind string, versions ...string) string {
	plural := strings.ToLower(kind) + "s"
	var vs strings.Builder
	for i, v := range versions {
		fmt.Fprintf(&vs, `    - name: %s
      served: true
      storage: %t
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`, v, i == len(versions)-1)
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.%s
spec:
  group: %s
  scope: Namespaced
  names: {kind: %s, plural: %s, singular: %s, listKind: %sList}
  versions:
%s`, plural, group, group, kind, plural, strings.ToLower(kind), kind, vs.String())
}

func (f *fixture) group() string { return f.ns + ".example.com" }

// createCustom creates an object of a CRD the release installed, as someone using it would.
func (f *fixture) createCustom(ctx context.Context, kind, version, name string) error {
	gvr := schema.GroupVersionResource{Group: f.group(), Version: version, Resource: strings.ToLower(kind) + "s"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": f.group() + "/" + version, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": f.ns}, "spec": map[string]any{"size": 3},
	}}
	_, err := env.Dynamic.Resource(gvr).Namespace(f.ns).Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (f *fixture) customExists(kind, version, name string) bool {
	f.t.Helper()
	gvr := schema.GroupVersionResource{Group: f.group(), Version: version, Resource: strings.ToLower(kind) + "s"}
	_, err := env.Dynamic.Resource(gvr).Namespace(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(f.t, err)
	return true
}

func (f *fixture) deleteCustom(kind, version, name string) {
	f.t.Helper()
	gvr := schema.GroupVersionResource{Group: f.group(), Version: version, Resource: strings.ToLower(kind) + "s"}
	require.NoError(f.t, env.Dynamic.Resource(gvr).Namespace(f.ns).Delete(f.ctx, name, metav1.DeleteOptions{}))
}

// waitCRDGone waits until a CRD the release deleted is gone; its API server finalizer removes
// it shortly after the delete.
func (f *fixture) waitCRDGone(name string) {
	f.t.Helper()
	require.NoError(f.t, testenv.Wait(f.ctx, time.Minute, func(context.Context) (bool, error) { return !f.crdExists(name), nil }),
		"CRD %s is still there", name)
}

func (f *fixture) crdExists(name string) bool {
	f.t.Helper()
	_, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(f.t, err)
	return true
}

// An upgrade that drops a CRD which still has objects is refused before anything is applied;
// once a person deletes the objects it goes ahead and prunes the CRD.
func TestUpgradeNeverDeletesACRDThatStillHasObjects(t *testing.T) {
	f := newFixture(t)
	v1 := app("nginx:1.0")
	v1["crd.yaml"] = crd(f.group(), "Widget", "v1")
	f.configMap("src", v1)
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), Version: "v1", Timeout: seconds(60)})
	f.waitRelease("web", "v1 deployed", deployed(1))
	require.NoError(t, f.createCustom(f.ctx, "Widget", "v1", "w1"))

	f.configMap("src", app("nginx:2.0"))
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "stalled on the CRD", stalledWith("CRDStillHasObjects"))
	message := condition(mr, "Stalled").Message
	assert.Contains(t, message, "would delete CRD widgets."+f.group())
	assert.Contains(t, message, "(such as "+f.ns+"/w1)")
	assert.Contains(t, message, "kubectl get widgets."+f.group()+" -A")
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"), "nothing of v2 is applied")
	assert.Equal(t, []int64{1}, f.snapshotNumbers("web"))
	assert.True(t, f.customExists("Widget", "v1", "w1"))

	f.deleteCustom("Widget", "v1", "w1")
	f.waitRelease("web", "v2 deployed once the Widget is gone", deployed(2))
	f.waitCRDGone("widgets." + f.group())
}

// An upgrade that removes a version still in status.storedVersions is refused, saying how to
// migrate; a version that keeps it serves both.
func TestUpgradeNeverDropsAStoredVersion(t *testing.T) {
	f := newFixture(t)
	v1 := app("nginx:1.0")
	v1["crd.yaml"] = crd(f.group(), "Widget", "v1")
	f.configMap("src", v1)
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), Version: "v1", Timeout: seconds(60)})
	f.waitRelease("web", "v1 deployed", deployed(1))
	require.NoError(t, f.createCustom(f.ctx, "Widget", "v1", "w1"))

	v2 := app("nginx:2.0")
	v2["crd.yaml"] = crd(f.group(), "Widget", "v2")
	f.configMap("src", v2)
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "stalled on the stored version", stalledWith("StoredVersionDropped"))
	message := condition(mr, "Stalled").Message
	assert.Contains(t, message, "would remove version v1 of CRD widgets."+f.group())
	assert.Contains(t, message, "kubectl patch crd widgets."+f.group()+" --subresource=status")
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))

	v3 := app("nginx:3.0")
	v3["crd.yaml"] = crd(f.group(), "Widget", "v1", "v2")
	f.configMap("src", v3)
	f.patchVersion("web", "v3")
	f.waitRelease("web", "v3 deployed (as snapshot 2: the refused v2 made none)", deployed(2))
	assert.True(t, f.customExists("Widget", "v2", "w1"), "no object is lost")
}

// A failed upgrade added a CRD that got objects while it ran: the rollback stops, Stalled, rather
// than delete them, and finishes once a person has removed them.
func TestRollbackKeepsTheCRDOfTheFailedVersionWhileItHasObjects(t *testing.T) {
	f := newFixture(t)
	f.configMap("tests", map[string]string{"smoke.yaml": smokeTest})
	f.configMap("src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), Version: "v1", Test: smokeTests(false), Timeout: seconds(60)})
	f.waitRelease("web", "v1 deployed", deployed(1))

	// v2's test fails, but only after someone has made a Gadget with v2's new CRD.
	f.setJobOutcome(func(*batchv1.Job) string {
		if f.createCustom(context.Background(), "Gadget", "v1", "g1") != nil {
			return ""
		}
		return "fail"
	})
	v2 := app("nginx:2.0")
	v2["gadgets.yaml"] = crd(f.group(), "Gadget", "v1")
	f.configMap("src", v2)
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "the rollback stalled on the CRD", stalledWith("CRDStillHasObjects"))
	assert.Contains(t, condition(mr, "Stalled").Message, "the rollback to v1 (snapshot 1) would delete CRD gadgets."+f.group())
	require.NotNil(t, mr.Status.Operation, "the rollback stays recorded, to finish later")
	assert.Equal(t, rollbackv1.ActionRollback, mr.Status.Operation.Action)
	assert.True(t, f.customExists("Gadget", "v1", "g1"))

	f.setJobOutcome(func(*batchv1.Job) string { return "pass" })
	f.deleteCustom("Gadget", "v1", "g1")
	mr = f.waitRelease("web", "rolled back once the Gadget is gone", rolledBackFrom(2))
	assert.Equal(t, int64(1), mr.Status.UpgradeNumber)
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))
	f.waitCRDGone("gadgets." + f.group())
}

// A person rolls back to any kept snapshot with one annotation; the version left is not applied
// again until the source changes, and a number not kept is refused with an Event.
func TestManualRollbackToN(t *testing.T) {
	f := newFixture(t)
	f.configMap("src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), Version: "v1", Timeout: seconds(60)})
	f.waitRelease("web", "v1 deployed", deployed(1))
	f.configMap("src", app("nginx:2.0", "extra"))
	f.patchVersion("web", "v2")
	f.waitRelease("web", "v2 deployed", deployed(2))
	f.configMap("src", app("nginx:3.0", "extra"))
	f.patchVersion("web", "v3")
	f.waitRelease("web", "v3 deployed", deployed(3))

	f.annotate("web", rollbackv1.RollbackToAnnotation, "1")
	mr := f.waitRelease("web", "rolled back to 1", func(m *rollbackv1.ManifestRelease) bool {
		return deployed(1)(m) && m.Status.LastHandledRollback == "1"
	})
	rolledBack := condition(mr, rollbackv1.ConditionRolledBack)
	assert.Equal(t, "RolledBackByHand", rolledBack.Reason)
	assert.Contains(t, rolledBack.Message, "from v3 (snapshot 3) to v1 (snapshot 1)")
	assert.Equal(t, metav1.ConditionTrue, condition(mr, "Ready").Status)
	assert.Equal(t, "v1", mr.Status.DeployedVersion)
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))
	assert.Equal(t, []string{"ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"), "v3's extra ConfigMap is deleted")
	assert.Equal(t, rollbackv1.ActionManualRollback, mr.Status.History[0].Action)
	f.waitMetric(1, "sluice_manifestrelease_rollbacks_total", "web", "trigger", "manual")
	assert.Equal(t, 3.0, f.metric("sluice_manifestrelease_upgrades_total", "web", "result", "succeeded"))
	assert.Zero(t, f.metric("sluice_manifestrelease_upgrades_total", "web", "result", "rolled_back"), "a rollback by hand ends no upgrade")

	mr = f.refresh("web")
	assert.Equal(t, int64(1), mr.Status.UpgradeNumber, "v3 is not applied again while the source still gives it")

	f.annotate("web", rollbackv1.RollbackToAnnotation, "7")
	f.waitRelease("web", "the request for 7 handled", func(m *rollbackv1.ManifestRelease) bool { return m.Status.LastHandledRollback == "7" })
	// Events are recorded asynchronously, after the status write.
	f.waitFor("the RollbackRefused Event", func() bool {
		return strings.Contains(strings.Join(f.events("web"), "\n"), "RollbackRefused: cannot roll back to snapshot 7")
	})

	f.configMap("src", app("nginx:4.0"))
	f.patchVersion("web", "v4")
	mr = f.waitRelease("web", "v4 deployed", deployed(4))
	assert.Equal(t, "nginx:4.0", f.deploymentImage("web"))
	_, err := testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns), "web", func(m *rollbackv1.ManifestRelease) {
		delete(m.Annotations, rollbackv1.RollbackToAnnotation)
	})
	require.NoError(t, err)
	f.waitRelease("web", "the handled request forgotten", func(m *rollbackv1.ManifestRelease) bool { return m.Status.LastHandledRollback == "" })
}
