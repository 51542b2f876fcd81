package apply_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	listKinds = map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}:                    "ConfigMapList",
		{Group: "apps", Version: "v1", Resource: "deployments"}:    "DeploymentList",
		{Group: "example.com", Version: "v1", Resource: "widgets"}: "WidgetList",
		crdGVR: "CustomResourceDefinitionList",
	}
	owner = map[string]string{"app.kubernetes.io/managed-by": "test"}
)

// mapper knows the built-in kinds; the kinds in pending are learnt on the next Reset, as a
// discovery cache learns a CRD once it is established.
type mapper struct {
	*meta.DefaultRESTMapper
	mu      sync.Mutex
	pending []schema.GroupVersionKind
	resets  int
	log     func(string)
}

func newMapper(log func(string), pending ...schema.GroupVersionKind) *mapper {
	m := &mapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil), pending: pending, log: log}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "ServiceAccount"}, {Group: "apps", Version: "v1", Kind: "Deployment"},
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, {Version: "v1", Kind: "Namespace"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	} {
		m.Add(gvk, meta.RESTScopeRoot)
	}
	return m
}

func (m *mapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resets++
	for _, gvk := range m.pending {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.pending = nil
	if m.log != nil {
		m.log("reset")
	}
}

func object(gvk schema.GroupVersionKind, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func configMap(name string, labels map[string]string) *unstructured.Unstructured {
	return object(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "apps", name, labels)
}

func newDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
}

// recorder logs what the fake API server sees, in order.
type recorder struct {
	mu      sync.Mutex
	entries []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, s)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.entries)
}

// patched decodes a server-side apply patch.
func patched(t *testing.T, a k8stesting.Action) (*unstructured.Unstructured, metav1.PatchOptions) {
	t.Helper()
	p := a.(k8stesting.PatchActionImpl)
	require.Equal(t, types.ApplyPatchType, p.GetPatchType())
	obj := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal(p.GetPatch(), &obj.Object))
	return obj, p.GetPatchOptions()
}

// CRDs and Namespaces go first; the rest waits until each CRD is Established and the mapper has
// learnt its kind; then one kind rank after another, the objects of a rank side by side, each
// with the owner's labels, the field manager and force.
func TestApplyGoesByStageThenRank(t *testing.T) {
	log := &recorder{}
	dyn := newDynamic()
	gets := 0
	dyn.PrependReactor("get", "customresourcedefinitions", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		crd := object(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "", "widgets.example.com", nil)
		if gets > 1 { // not at the first look: the wait must poll
			require.NoError(t, unstructured.SetNestedSlice(crd.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions"))
			log.add("established")
		}
		return true, crd, nil
	})
	// Both ConfigMaps must be in flight at once: one rank is applied in parallel.
	var inFlight sync.WaitGroup
	inFlight.Add(2)
	var patches sync.Map
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, opts := patched(t, a)
		patches.Store(obj.GetKind()+"/"+obj.GetName(), struct {
			obj  *unstructured.Unstructured
			opts metav1.PatchOptions
		}{obj, opts})
		log.add(obj.GetKind() + "/" + obj.GetName())
		return true, obj, nil
	})
	// The fake serializes calls; the barrier is before it.
	barrier := func(obj *unstructured.Unstructured) {
		if obj.GetKind() == "ConfigMap" {
			inFlight.Done()
			waitOrFail(t, &inFlight)
		}
	}
	m := newMapper(log.add, widgetGVK)
	a := &apply.Applier{Dynamic: beforeApply{dyn, barrier}, Mapper: m, FieldManager: "sluice-test", Poll: time.Millisecond}

	objs := []*unstructured.Unstructured{
		object(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "", "widgets.example.com", nil),
		object(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "apps", nil),
		object(schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "apps", "web", nil),
		configMap("a", map[string]string{"tier": "web"}), configMap("b", nil),
		object(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "apps", "web", nil),
		object(widgetGVK, "apps", "w", nil),
		object(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, "", "hook", nil),
	}
	require.NoError(t, a.Apply(context.Background(), objs, owner))

	got := log.all()
	assert.Equal(t, []string{"CustomResourceDefinition/widgets.example.com", "Namespace/apps", "established", "reset", "ServiceAccount/web"}, got[:5])
	assert.ElementsMatch(t, []string{"ConfigMap/a", "ConfigMap/b"}, got[5:7], "one rank, side by side")
	assert.Equal(t, []string{"Deployment/web", "Widget/w", "ValidatingWebhookConfiguration/hook"}, got[7:],
		"the custom kind is known once its CRD is established; webhooks come last")
	assert.Equal(t, 1, m.resets)

	v, ok := patches.Load("ConfigMap/a")
	require.True(t, ok)
	p := v.(struct {
		obj  *unstructured.Unstructured
		opts metav1.PatchOptions
	})
	assert.Equal(t, map[string]string{"tier": "web", "app.kubernetes.io/managed-by": "test"}, p.obj.GetLabels(), "the owner's labels beside the object's")
	assert.Equal(t, "sluice-test", p.opts.FieldManager)
	require.NotNil(t, p.opts.Force)
	assert.True(t, *p.opts.Force, "a field changed by hand is taken back")
	assert.Equal(t, map[string]string{"tier": "web"}, objs[3].GetLabels(), "the objects given are not changed")
}

// beforeApply calls before ahead of each Apply through the client it wraps.
type beforeApply struct {
	dynamic.Interface
	before func(*unstructured.Unstructured)
}

func (b beforeApply) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return beforeApplyResource{b.Interface.Resource(gvr), b.before}
}

type beforeApplyResource struct {
	dynamic.NamespaceableResourceInterface
	before func(*unstructured.Unstructured)
}

func (r beforeApplyResource) Namespace(ns string) dynamic.ResourceInterface {
	return beforeApplyNamespaced{r.NamespaceableResourceInterface.Namespace(ns), r.before}
}

func (r beforeApplyResource) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.before(obj)
	return r.NamespaceableResourceInterface.Apply(ctx, name, obj, opts, sub...)
}

type beforeApplyNamespaced struct {
	dynamic.ResourceInterface
	before func(*unstructured.Unstructured)
}

func (r beforeApplyNamespaced) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.before(obj)
	return r.ResourceInterface.Apply(ctx, name, obj, opts, sub...)
}

// waitOrFail waits for wg, failing the test instead of hanging when the objects of one rank are
// applied one by one.
func waitOrFail(t *testing.T, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the objects of one rank are not applied side by side")
	}
}

// The first refusal stops the apply, names the object, and nothing of a later rank is applied.
func TestApplyStopsAtTheFirstRefusal(t *testing.T) {
	dyn := newDynamic()
	var applied []string
	var mu sync.Mutex
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, _ := patched(t, a)
		mu.Lock()
		applied = append(applied, obj.GetKind())
		mu.Unlock()
		if obj.GetKind() == "ConfigMap" {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, obj.GetName(), nil)
		}
		return true, obj, nil
	})
	a := &apply.Applier{Dynamic: dyn, Mapper: newMapper(nil), FieldManager: "sluice-test"}
	err := a.Apply(context.Background(), []*unstructured.Unstructured{
		configMap("bad", nil), object(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "apps", "web", nil),
	}, owner)
	var failed *apply.Error
	require.ErrorAs(t, err, &failed)
	assert.Equal(t, "ConfigMap/apps/bad", failed.Object.String())
	assert.True(t, apierrors.IsInvalid(err), "the API server's error is kept: %v", err)
	assert.Equal(t, []string{"ConfigMap"}, applied)
}

// A kind the mapper does not know makes it look again once, then the apply fails with a
// no-match error naming the object.
func TestApplyOfAnUnknownKindResetsTheMapperOnce(t *testing.T) {
	m := newMapper(nil)
	a := &apply.Applier{Dynamic: newDynamic(), Mapper: m, FieldManager: "sluice-test"}
	err := a.Apply(context.Background(), []*unstructured.Unstructured{object(widgetGVK, "apps", "w", nil)}, owner)
	assert.True(t, meta.IsNoMatchError(err), "%v", err)
	assert.ErrorContains(t, err, "Widget.example.com/apps/w")
	assert.Equal(t, 1, m.resets)
}

// Delete removes what carries the owner's labels, with the live object's UID as a precondition;
// it refuses, and goes on past, an object someone else owns; what is gone already, or whose kind
// is gone, counts as done.
func TestDeleteOnlyWhatTheOwnerLabelled(t *testing.T) {
	ours := configMap("ours", owner)
	ours.SetUID("uid-ours")
	theirs := configMap("theirs", map[string]string{"app.kubernetes.io/managed-by": "someone-else"})
	dyn := newDynamic(ours, theirs)
	a := &apply.Applier{Dynamic: dyn, Mapper: newMapper(nil), FieldManager: "sluice-test"}
	refs := []manifest.Ref{
		manifest.RefOf(theirs), manifest.RefOf(configMap("gone", nil)), manifest.RefOf(object(widgetGVK, "apps", "w", nil)), manifest.RefOf(ours),
	}
	deleted, err := a.Delete(context.Background(), refs, owner)
	assert.Equal(t, []manifest.Ref{manifest.RefOf(ours)}, deleted)
	require.ErrorIs(t, err, apply.ErrNotOwned)
	assert.ErrorContains(t, err, "ConfigMap/apps/theirs")

	var deletes []k8stesting.DeleteActionImpl
	for _, action := range dyn.Actions() {
		if d, ok := action.(k8stesting.DeleteActionImpl); ok {
			deletes = append(deletes, d)
		}
	}
	require.Len(t, deletes, 1)
	opts := deletes[0].GetDeleteOptions()
	require.NotNil(t, opts.Preconditions)
	assert.Equal(t, types.UID("uid-ours"), *opts.Preconditions.UID, "never an object recreated meanwhile")
	assert.Equal(t, metav1.DeletePropagationBackground, *opts.PropagationPolicy)
	_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("apps").Get(context.Background(), "theirs", metav1.GetOptions{})
	assert.NoError(t, err, "someone else's object stays")
}

// readyByLabel judges an object by its "state" label: the health a test needs, without CEL.
func readyByLabel(obj *unstructured.Unstructured) health.Result {
	switch obj.GetLabels()["state"] {
	case "ready":
		return health.Result{Status: health.Current, Message: "ready"}
	case "broken":
		return health.Result{Status: health.Failed, Message: "crash loop"}
	}
	return health.Result{Status: health.InProgress, Message: "rolling out"}
}

func withState(state string) map[string]string {
	return map[string]string{"app.kubernetes.io/managed-by": "test", "state": state}
}

func TestWaitForHealth(t *testing.T) {
	ctx := context.Background()
	ready, slow, broken := configMap("ready", withState("ready")), configMap("slow", withState("")), configMap("broken", withState("broken"))
	unowned := configMap("unowned", map[string]string{"state": "ready"})
	a := &apply.Applier{Dynamic: newDynamic(ready, slow, broken, unowned), Mapper: newMapper(nil), Health: readyByLabel, Poll: time.Millisecond}

	require.NoError(t, a.Wait(ctx, []manifest.Ref{manifest.RefOf(ready)}, owner, time.Minute, nil))

	err := a.Wait(ctx, []manifest.Ref{manifest.RefOf(ready), manifest.RefOf(broken)}, owner, time.Minute, nil)
	var failed *apply.FailedError
	require.ErrorAs(t, err, &failed, "a failed object ends the wait at once")
	assert.Equal(t, "ConfigMap/apps/broken failed: crash loop", err.Error())

	err = a.Wait(ctx, []manifest.Ref{manifest.RefOf(ready), manifest.RefOf(slow), manifest.RefOf(unowned)}, owner, 20*time.Millisecond, nil)
	var timeout *apply.TimeoutError
	require.ErrorAs(t, err, &timeout)
	assert.Equal(t, 20*time.Millisecond, timeout.After)
	assert.Equal(t, "not healthy after 20ms: ConfigMap/apps/slow is InProgress (rolling out); ConfigMap/apps/unowned is NotFound (not found)",
		err.Error(), "only what is still pending, and an object without the owner's labels is not seen")

	judge := func(ref manifest.Ref, obj *unstructured.Unstructured) health.Result {
		return health.Result{Status: health.Current}
	}
	assert.NoError(t, a.Wait(ctx, []manifest.Ref{manifest.RefOf(slow)}, owner, time.Minute, judge), "a judge replaces the health check")
}

// Pending is one round of Wait: what is not healthy yet, at once, without waiting.
func TestPendingLooksOnce(t *testing.T) {
	ctx := context.Background()
	ready, slow, broken := configMap("ready", withState("ready")), configMap("slow", withState("")), configMap("broken", withState("broken"))
	a := &apply.Applier{Dynamic: newDynamic(ready, slow, broken), Mapper: newMapper(nil), Health: readyByLabel, Poll: time.Hour}

	pending, err := a.Pending(ctx, []manifest.Ref{manifest.RefOf(ready), manifest.RefOf(slow)}, owner, nil)
	require.NoError(t, err)
	assert.Equal(t, []apply.Pending{{Object: manifest.RefOf(slow), Health: health.Result{Status: health.InProgress, Message: "rolling out"}}}, pending)

	pending, err = a.Pending(ctx, []manifest.Ref{manifest.RefOf(ready)}, owner, nil)
	require.NoError(t, err)
	assert.Empty(t, pending)

	_, err = a.Pending(ctx, []manifest.Ref{manifest.RefOf(slow), manifest.RefOf(broken)}, owner, nil)
	var failed *apply.FailedError
	require.ErrorAs(t, err, &failed)
	assert.Equal(t, manifest.RefOf(broken), failed.Object)
}

func TestTimeoutErrorNamesFiveAndCountsTheRest(t *testing.T) {
	e := &apply.TimeoutError{After: time.Minute}
	for i := range 7 {
		e.Pending = append(e.Pending, apply.Pending{Object: manifest.RefOf(configMap(fmt.Sprintf("c%d", i), nil)),
			Health: health.Result{Status: health.InProgress, Message: "waiting"}})
	}
	msg := e.Error()
	assert.Equal(t, 5, strings.Count(msg, " is InProgress"))
	assert.True(t, strings.HasSuffix(msg, "; and 2 more"), msg)
}

// CRDStates reads the stored versions of each CRD and whether objects of its kind exist, other
// than those the plan deletes before it; a CRD that does not exist is left out.
func TestCRDStates(t *testing.T) {
	crd := object(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "", "widgets.example.com", nil)
	require.NoError(t, unstructured.SetNestedField(crd.Object, "example.com", "spec", "group"))
	require.NoError(t, unstructured.SetNestedField(crd.Object, "widgets", "spec", "names", "plural"))
	require.NoError(t, unstructured.SetNestedField(crd.Object, widgetGVK.Kind, "spec", "names", "kind"))
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, []any{
		map[string]any{"name": "v1beta1", "served": false}, map[string]any{"name": "v1", "served": true},
	}, "spec", "versions"))
	require.NoError(t, unstructured.SetNestedStringSlice(crd.Object, []string{"v1beta1", "v1"}, "status", "storedVersions"))
	dyn := newDynamic(crd, object(widgetGVK, "apps", "w1", nil), object(widgetGVK, "apps", "w2", nil))
	a := &apply.Applier{Dynamic: dyn, Mapper: newMapper(nil)}

	states, err := a.CRDStates(context.Background(), []string{"widgets.example.com", "gadgets.example.com"}, nil)
	require.NoError(t, err)
	require.Len(t, states, 1, "a CRD that does not exist is left out")
	s := states["widgets.example.com"]
	assert.Equal(t, []string{"v1beta1", "v1"}, s.StoredVersions)
	assert.Equal(t, 2, s.Objects)
	assert.Contains(t, []string{"apps/w1", "apps/w2"}, s.Example)

	w1 := manifest.RefOf(object(widgetGVK, "apps", "w1", nil))
	states, err = a.CRDStates(context.Background(), []string{"widgets.example.com"}, []manifest.Ref{w1})
	require.NoError(t, err)
	assert.Equal(t, 1, states["widgets.example.com"].Objects, "w1 goes before its CRD: only w2 would be lost")
	assert.Equal(t, "apps/w2", states["widgets.example.com"].Example)
	w2 := manifest.RefOf(object(widgetGVK, "apps", "w2", nil))
	states, err = a.CRDStates(context.Background(), []string{"widgets.example.com"}, []manifest.Ref{w1, w2})
	require.NoError(t, err)
	assert.Zero(t, states["widgets.example.com"].Objects, "every object goes before the CRD")

	dyn.PrependReactor("get", "customresourcedefinitions", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is slow")
	})
	_, err = a.CRDStates(context.Background(), []string{"widgets.example.com"}, nil)
	assert.ErrorContains(t, err, "read CRD widgets.example.com: etcd is slow")
}
