package dynamicwatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

var widgets = schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "widgets"}

func widget(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.org/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	u.SetAnnotations(map[string]string{dynamicwatch.LastAppliedAnnotation: `{"big":"copy"}`})
	return u
}

func newClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"}, objs...)
}

// recorder collects callbacks for assertions.
type recorder struct {
	mu     sync.Mutex
	events []string
	synced map[dynamicwatch.Scope][]string
	errs   []error
}

func (r *recorder) options() dynamicwatch.Options {
	r.synced = map[dynamicwatch.Scope][]string{}
	return dynamicwatch.Options{
		OnEvent: func(s dynamicwatch.Scope, old, new *unstructured.Unstructured) {
			r.mu.Lock()
			defer r.mu.Unlock()
			switch {
			case old == nil:
				r.events = append(r.events, "add "+new.GetName())
			case new == nil:
				r.events = append(r.events, "delete "+old.GetName())
			default:
				r.events = append(r.events, "update "+new.GetName())
			}
		},
		OnSynced: func(s dynamicwatch.Scope, owners []string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.synced[s] = owners
		},
		OnError: func(s dynamicwatch.Scope, owners []string, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.errs = append(r.errs, err)
		},
	}
}

func (r *recorder) has(event string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e == event {
			return true
		}
	}
	return false
}

func run(t *testing.T, w *dynamicwatch.Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func synced(t *testing.T, w *dynamicwatch.Watcher, s dynamicwatch.Scope) {
	t.Helper()
	require.Eventually(t, func() bool { ok, _ := w.State(s); return ok }, 10*time.Second, 10*time.Millisecond)
}

func TestWatchStartsOnFirstOwnerAndServesTheCache(t *testing.T) {
	client := newClient(widget("apps", "a", map[string]string{"tier": "web"}), widget("apps", "b", nil), widget("other", "c", nil))
	rec := &recorder{}
	w := dynamicwatch.New(client, rec.options())
	scope := dynamicwatch.Scope{Resource: widgets, Namespace: "apps"}

	w.Add("hc-1", scope) // before Run: starts with it
	run(t, w)
	synced(t, w, scope)
	require.Eventually(t, func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.synced[scope] != nil }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"hc-1"}, rec.synced[scope])

	a, ok, err := w.Get(scope, "apps", "a")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, a.GetManagedFields(), "managedFields are stripped before caching")
	assert.Empty(t, a.GetAnnotations(), "the last-applied copy is stripped too")
	_, ok, err = w.Get(scope, "other", "c")
	require.NoError(t, err)
	assert.False(t, ok, "a namespaced scope holds only its namespace")

	web, err := w.List(scope, labels.SelectorFromSet(labels.Set{"tier": "web"}))
	require.NoError(t, err)
	require.Len(t, web, 1)
	assert.Equal(t, "a", web[0].GetName())

	_, err = client.Resource(widgets).Namespace("apps").Create(context.Background(), widget("apps", "d", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rec.has("add d") }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, client.Resource(widgets).Namespace("apps").Delete(context.Background(), "b", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return rec.has("delete b") }, 5*time.Second, 10*time.Millisecond)

	stats := w.Stats()
	require.Len(t, stats, 1)
	assert.Equal(t, 2, stats[0].Objects)
	assert.Equal(t, 1, stats[0].Owners)
}

func TestWatchStopsWhenTheLastOwnerLetsGo(t *testing.T) {
	w := dynamicwatch.New(newClient(widget("apps", "a", nil)), dynamicwatch.Options{})
	run(t, w)
	apps := dynamicwatch.Scope{Resource: widgets, Namespace: "apps"}
	other := dynamicwatch.Scope{Resource: widgets, Namespace: "other"}

	w.Set("hc-1", apps)
	w.Set("hc-2", apps, other)
	synced(t, w, apps)
	synced(t, w, other)
	assert.Len(t, w.Stats(), 2)

	w.Set("hc-2", other) // hc-1 still holds apps
	assert.Len(t, w.Stats(), 2)
	w.Release("hc-1")
	stats := w.Stats()
	require.Len(t, stats, 1, "apps has no owner left")
	assert.Equal(t, other, stats[0].Scope)
	ok, _ := w.State(apps)
	assert.False(t, ok)
	_, _, err := w.Get(apps, "apps", "a")
	assert.ErrorContains(t, err, "not watched")
	assert.ElementsMatch(t, []dynamicwatch.Scope{other}, w.Owned("hc-2"))

	w.Release("hc-2")
	assert.Empty(t, w.Stats())
	assert.Empty(t, w.Owned("hc-2"))
}

func TestWatchReportsListErrors(t *testing.T) {
	client := newClient()
	client.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(widgets.GroupResource(), "", nil)
	})
	rec := &recorder{}
	w := dynamicwatch.New(client, rec.options())
	run(t, w)
	scope := dynamicwatch.Scope{Resource: widgets, Namespace: "apps"}
	w.Add("hc-1", scope)

	require.Eventually(t, func() bool { _, err := w.State(scope); return err != nil }, 10*time.Second, 10*time.Millisecond)
	ok, err := w.State(scope)
	assert.False(t, ok)
	assert.True(t, apierrors.IsForbidden(err), "got %v", err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.NotEmpty(t, rec.errs, "owners hear about it")
}

func TestStripManagedFieldsKeepsOtherAnnotations(t *testing.T) {
	u := widget("apps", "a", nil)
	u.SetAnnotations(map[string]string{dynamicwatch.LastAppliedAnnotation: "{}", "team": "web"})
	out, err := dynamicwatch.StripManagedFields(u)
	require.NoError(t, err)
	got := out.(*unstructured.Unstructured)
	assert.Equal(t, map[string]string{"team": "web"}, got.GetAnnotations())
	assert.Nil(t, got.GetManagedFields())
	assert.Equal(t, "a", got.GetName())

	kept, err := dynamicwatch.KeepAll(widget("apps", "b", nil))
	require.NoError(t, err)
	assert.NotEmpty(t, kept.(*unstructured.Unstructured).GetManagedFields())
}
