package dynamicwatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// deployment is a widget shaped like a Deployment: a large spec of which a health check reads
// one field.
func deployment(ns, name string) *unstructured.Unstructured {
	u := widget(ns, name, map[string]string{"app": name})
	u.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "4"})
	u.Object["spec"] = map[string]any{
		"replicas": int64(3),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}}},
		"strategy": map[string]any{"type": "RollingUpdate"},
	}
	u.Object["status"] = map[string]any{"replicas": int64(3), "conditions": []any{map[string]any{"type": "Available", "status": "True"}}}
	return u
}

func TestFieldsUnionAndCovers(t *testing.T) {
	replicas := dynamicwatch.FieldsOf([]string{"spec", "replicas"}, []string{"status"})
	template := dynamicwatch.FieldsOf([]string{"spec", "template", "spec"})
	both := dynamicwatch.Union(replicas, template)

	assert.True(t, dynamicwatch.Covers(both, replicas))
	assert.True(t, dynamicwatch.Covers(both, template))
	assert.False(t, dynamicwatch.Covers(replicas, template))
	assert.False(t, dynamicwatch.Covers(replicas, dynamicwatch.FieldsOf([]string{"spec"})), "the whole spec is more than spec.replicas")
	assert.True(t, dynamicwatch.Covers(dynamicwatch.FieldsOf([]string{"spec"}), dynamicwatch.FieldsOf([]string{"spec", "replicas"})))
	assert.True(t, dynamicwatch.Covers(dynamicwatch.All, both))
	assert.False(t, dynamicwatch.Covers(both, dynamicwatch.All))
	assert.Nil(t, dynamicwatch.Union(both, dynamicwatch.All), "anything with All is All")
	assert.Nil(t, dynamicwatch.FieldsOf([]string{"spec"}, []string{}), "an empty path keeps everything")
}

func TestProjectKeepsOnlyTheFieldsAndStripsManagedFields(t *testing.T) {
	transform := dynamicwatch.Project(dynamicwatch.FieldsOf(
		[]string{"metadata"}, []string{"spec", "replicas"}, []string{"spec", "strategy", "missing"}, []string{"status", "conditions", "type"}))
	out, err := transform(deployment("apps", "a"))
	require.NoError(t, err)
	got := out.(*unstructured.Unstructured)
	assert.Equal(t, map[string]any{"replicas": int64(3), "strategy": map[string]any{}}, got.Object["spec"])
	assert.Equal(t, []any{map[string]any{"type": "Available", "status": "True"}}, got.Object["status"].(map[string]any)["conditions"],
		"a list is kept whole")
	assert.NotContains(t, got.Object, "apiVersion", "only what is asked for")
	assert.Empty(t, got.GetManagedFields())
	assert.Equal(t, "a", got.GetName())

	tombstone, err := transform(cache.DeletedFinalStateUnknown{Key: "apps/a", Obj: deployment("apps", "a")})
	require.NoError(t, err)
	gone := tombstone.(cache.DeletedFinalStateUnknown).Obj.(*unstructured.Unstructured)
	assert.NotContains(t, gone.Object["spec"], "template")
	assert.Empty(t, gone.GetManagedFields())

	all, err := dynamicwatch.Project(dynamicwatch.All)(deployment("apps", "a"))
	require.NoError(t, err)
	assert.Contains(t, all.(*unstructured.Unstructured).Object["spec"], "template")
}

func TestWatchKeepsWhatItsOwnersRead(t *testing.T) {
	client := newClient(deployment("apps", "a"))
	rec := &recorder{}
	w := dynamicwatch.New(client, rec.options())
	run(t, w)
	scope := dynamicwatch.Scope{Resource: widgets, Namespace: "apps"}
	replicas := dynamicwatch.FieldsOf([]string{"spec", "replicas"}, []string{"status"})

	w.SetNeeds("hc-1", dynamicwatch.Need{Scope: scope, Fields: replicas})
	synced(t, w, scope)
	a, _, err := w.Get(scope, "apps", "a")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": int64(3)}, a.Object["spec"])
	assert.Equal(t, "Widget", a.GetKind(), "apiVersion, kind, name, namespace and labels are always kept")
	assert.Equal(t, "a", a.GetName())
	assert.Equal(t, "apps", a.GetNamespace())
	assert.Equal(t, map[string]string{"app": "a"}, a.GetLabels())
	assert.Empty(t, a.GetAnnotations(), "other metadata only when an owner reads it")
	labelled, err := w.List(scope, labels.SelectorFromSet(labels.Set{"app": "a"}))
	require.NoError(t, err)
	assert.Len(t, labelled, 1)

	// A second owner reading no more changes nothing.
	w.SetNeeds("hc-2", dynamicwatch.Need{Scope: scope, Fields: dynamicwatch.FieldsOf([]string{"status"})})
	ok, _ := w.State(scope)
	assert.True(t, ok)

	// A third reading the template: the watch lists again, and is not synced for hc-3 until it
	// has. The first list's callback is awaited first, so that it cannot pass for the second's.
	syncedOwners := func() []string {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.synced[scope]
	}
	require.Eventually(t, func() bool { return syncedOwners() != nil }, 10*time.Second, 10*time.Millisecond)
	rec.mu.Lock()
	rec.synced = map[dynamicwatch.Scope][]string{}
	rec.mu.Unlock()
	w.SetNeeds("hc-3", dynamicwatch.Need{Scope: scope, Fields: dynamicwatch.FieldsOf([]string{"spec", "template"})})
	require.Eventually(t, func() bool { return syncedOwners() != nil }, 10*time.Second, 10*time.Millisecond,
		"owners hear when the wider cache is ready")
	assert.Equal(t, []string{"hc-1", "hc-2", "hc-3"}, syncedOwners())
	ok, _ = w.StateFor("hc-3", scope)
	assert.True(t, ok)
	a, _, err = w.Get(scope, "apps", "a")
	require.NoError(t, err)
	assert.Contains(t, a.Object["spec"], "template")
	assert.Contains(t, a.Object["spec"], "replicas")
	assert.NotContains(t, a.Object["spec"], "strategy")

	// Events still flow from the new informer.
	_, err = client.Resource(widgets).Namespace("apps").Create(context.Background(), deployment("apps", "b"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok, _ := w.Get(scope, "apps", "b"); return ok }, 5*time.Second, 10*time.Millisecond)

	// An owner of every field, the way Set asks.
	w.Set("hc-4", scope)
	synced(t, w, scope)
	require.Eventually(t, func() bool {
		a, _, _ := w.Get(scope, "apps", "a")
		return a != nil && a.Object["spec"].(map[string]any)["strategy"] != nil
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 4, w.Stats()[0].Owners)
}

func TestWatchWidenedBeforeRunStartsWide(t *testing.T) {
	w := dynamicwatch.New(newClient(deployment("apps", "a")), dynamicwatch.Options{})
	scope := dynamicwatch.Scope{Resource: widgets, Namespace: "apps"}
	w.SetNeeds("hc-1", dynamicwatch.Need{Scope: scope, Fields: dynamicwatch.FieldsOf([]string{"status"})})
	w.SetNeeds("hc-2", dynamicwatch.Need{Scope: scope, Fields: dynamicwatch.FieldsOf([]string{"spec", "replicas"})})
	run(t, w)
	synced(t, w, scope)
	a, _, err := w.Get(scope, "apps", "a")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": int64(3)}, a.Object["spec"])
	assert.Contains(t, a.Object, "status")
}

// While a watch lists again for an owner who reads more, the owners it already served read on:
// their HealthChecks do not flap to "waiting for the watches".
func TestWideningKeepsTheOtherOwnersReading(t *testing.T) {
	client := newClient(deployment("apps", "a"))
	var mu sync.Mutex
	block := false
	entered, release := make(chan struct{}), make(chan struct{})
	client.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		wait := block
		block = false
		mu.Unlock()
		if wait {
			close(entered)
			<-release
		}
		return false, nil, nil
	})
	w := dynamicwatch.New(client, dynamicwatch.Options{})
	run(t, w)
	scope := dynamicwatch.Scope{Resource: widgets, Namespace: "apps"}
	w.SetNeeds("hc-1", dynamicwatch.Need{Scope: scope, Fields: dynamicwatch.FieldsOf([]string{"status"})})
	synced(t, w, scope)

	mu.Lock()
	block = true
	mu.Unlock()
	w.SetNeeds("hc-2", dynamicwatch.Need{Scope: scope, Fields: dynamicwatch.FieldsOf([]string{"spec", "template"})})
	<-entered
	ok, err := w.StateFor("hc-1", scope)
	assert.True(t, ok, "hc-1 reads what the cache keeps")
	assert.NoError(t, err)
	ok, _ = w.StateFor("hc-2", scope)
	assert.False(t, ok, "hc-2 waits for the wider list")
	ok, _ = w.StateFor("nobody", scope)
	assert.False(t, ok, "a scope is not synced for a reader that does not own it")
	a, _, err := w.Get(scope, "apps", "a")
	require.NoError(t, err)
	assert.NotContains(t, a.Object, "spec")

	close(release)
	require.Eventually(t, func() bool { ok, _ := w.StateFor("hc-2", scope); return ok }, 10*time.Second, 10*time.Millisecond)
	a, _, err = w.Get(scope, "apps", "a")
	require.NoError(t, err)
	assert.Contains(t, a.Object["spec"], "template")
	ok, _ = w.StateFor("hc-1", scope)
	assert.True(t, ok)
}
