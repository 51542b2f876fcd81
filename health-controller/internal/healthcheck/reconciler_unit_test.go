package healthcheck

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	healthlisters "github.com/sluicehq/sluice/api/generated/listers/health/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/userlib"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// fakeWatches serves objects from memory, every scope listed, and records what owners read.
type fakeWatches struct {
	objects map[dynamicwatch.Scope][]*unstructured.Unstructured
	owned   map[string][]dynamicwatch.Scope
	needs   map[string]map[dynamicwatch.Scope]dynamicwatch.Fields
}

func (w *fakeWatches) State(dynamicwatch.Scope) (bool, error)            { return true, nil }
func (w *fakeWatches) StateFor(string, dynamicwatch.Scope) (bool, error) { return true, nil }
func (w *fakeWatches) Get(s dynamicwatch.Scope, namespace, name string) (*unstructured.Unstructured, bool, error) {
	for _, u := range w.objects[s] {
		if u.GetNamespace() == namespace && u.GetName() == name {
			return u, true, nil
		}
	}
	return nil, false, nil
}
func (w *fakeWatches) List(s dynamicwatch.Scope, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, u := range w.objects[s] {
		if sel.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	return out, nil
}
func (w *fakeWatches) AddNeeds(owner string, needs ...dynamicwatch.Need) {
	if w.needs[owner] == nil {
		w.needs[owner] = map[dynamicwatch.Scope]dynamicwatch.Fields{}
	}
	for _, n := range needs {
		w.owned[owner] = append(w.owned[owner], n.Scope)
		w.needs[owner][n.Scope] = n.Fields
	}
}
func (w *fakeWatches) SetNeeds(owner string, needs ...dynamicwatch.Need) {
	w.owned[owner], w.needs[owner] = nil, nil
	w.AddNeeds(owner, needs...)
}
func (w *fakeWatches) Owned(owner string) []dynamicwatch.Scope { return w.owned[owner] }
func (w *fakeWatches) Release(owner string)                    { delete(w.owned, owner) }
func (w *fakeWatches) Stats() []dynamicwatch.ScopeStats        { return nil }

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

type unit struct {
	r       *Reconciler
	client  *fake.Clientset
	hcs     cache.Indexer
	watches *fakeWatches
	events  *record.FakeRecorder
	now     time.Time
}

func newUnit(t *testing.T, hcYAML string, objects ...string) *unit {
	t.Helper()
	var hc healthv1alpha1.HealthCheck
	require.NoError(t, yaml.UnmarshalStrict([]byte(hcYAML), &hc))
	hc.Namespace, hc.Generation = "apps", 1
	u := &unit{
		client: fake.NewSimpleClientset(&hc),
		hcs:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		watches: &fakeWatches{objects: map[dynamicwatch.Scope][]*unstructured.Unstructured{}, owned: map[string][]dynamicwatch.Scope{},
			needs: map[string]map[dynamicwatch.Scope]dynamicwatch.Fields{}},
		events: record.NewFakeRecorder(20),
		now:    time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC),
	}
	require.NoError(t, u.hcs.Add(&hc))
	for _, doc := range objects {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		obj := &unstructured.Unstructured{Object: m}
		scope := dynamicwatch.Scope{Resource: configMaps, Namespace: obj.GetNamespace()}
		u.watches.objects[scope] = append(u.watches.objects[scope], obj)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	compiler, err := cel.NewCompiler(cel.WithCostLimit(cel.DefaultCostLimit))
	require.NoError(t, err)
	builtin, err := health.NewLayer(health.SourceBuiltin, nil)
	require.NoError(t, err)
	metrics, err := NewMetrics(prometheus.NewRegistry(), u.watches)
	require.NoError(t, err)
	u.r = &Reconciler{
		Lister: healthlisters.NewHealthCheckLister(u.hcs), Client: u.client, Watcher: u.watches, Mapper: mapper,
		Compiler: compiler, Builtin: builtin, Library: userlib.New(compiler, "sluice-system", ""),
		Recorder: u.events, Metrics: metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AllowCrossNamespaceRefs: true, Clock: clockFunc(func() time.Time { return u.now }), index: newIndex(),
	}
	return u
}

// reconcile runs one reconcile and feeds the written status back to the lister, as the
// informer would.
func (u *unit) reconcile(t *testing.T) (*healthv1alpha1.HealthCheck, time.Duration) {
	t.Helper()
	res, err := u.r.Reconcile(context.Background(), "apps/web")
	require.NoError(t, err)
	hc, err := u.client.HealthV1alpha1().HealthChecks("apps").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, u.hcs.Update(hc))
	return hc, res.RequeueAfter
}

func (u *unit) statusWrites() int {
	n := 0
	for _, a := range u.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

const configMapCheck = `
metadata: {name: web}
spec:
  targets:
  - object: {apiVersion: v1, kind: ConfigMap, name: flags}
  healthCheckExprs:
  - apiVersion: v1
    kind: ConfigMap
    current: %s
`

const flags = `{apiVersion: v1, kind: ConfigMap, metadata: {name: flags, namespace: apps}, data: {mode: fast}}`

// Item 7: an expression that cannot be evaluated on a ConfigMap, a kind without status, is
// Unknown with the error, and the default timeout still runs.
func TestReconcileReportsEvaluationErrorsOnKindsWithoutStatus(t *testing.T) {
	for name, c := range map[string]struct{ expr, has string }{
		"a string result": {`"self.data.mode"`, "got string"},
		"a missing key":   {`"self.data.missing == 'x'"`, "no such key"},
	} {
		t.Run(name, func(t *testing.T) {
			u := newUnit(t, fmt.Sprintf(configMapCheck, c.expr), flags)
			hc, requeue := u.reconcile(t)
			require.Len(t, hc.Status.Resources, 1)
			r := hc.Status.Resources[0]
			assert.Equal(t, healthv1alpha1.StatusUnknown, r.Status)
			assert.Contains(t, r.Message, c.has)
			assert.True(t, strings.HasPrefix(r.Message, "spec.healthCheckExprs: "), r.Message)
			assert.False(t, hc.Status.Healthy)
			ready := conditions.Get(hc.Status.Conditions, conditions.Ready)
			require.NotNil(t, ready)
			assert.Contains(t, ready.Message, "1 Unknown of 1")
			assert.Equal(t, DefaultTimeout, requeue, "without spec.timeout the default timeout runs")

			u.now = u.now.Add(DefaultTimeout)
			hc, _ = u.reconcile(t)
			assert.Equal(t, healthv1alpha1.ReasonTimedOut, conditions.Get(hc.Status.Conditions, conditions.Ready).Reason)
		})
	}
}

// Item 7: a check from the user library ConfigMap that does more work than the CEL cost limit
// allows is stopped, and the error says so on the ConfigMap it checks, a kind without status,
// instead of waiting forever for a controller to report.
func TestReconcileReportsAUserLibraryCheckOverTheCostLimitOnAKindWithoutStatus(t *testing.T) {
	blob := strings.Repeat("a", 1000)
	u := newUnit(t, `
metadata: {name: web}
spec:
  targets:
  - object: {apiVersion: v1, kind: ConfigMap, name: flags}
`, `{apiVersion: v1, kind: ConfigMap, metadata: {name: flags, namespace: apps}, data: {blob: `+blob+`}}`)
	u.r.Library = userlib.New(u.r.Compiler, "sluice-system", "health-checks")
	u.r.Library.Update(&corev1.ConfigMap{Data: map[string]string{"configmaps.yaml": `
- apiVersion: v1
  kind: ConfigMap
  current: "self.data.blob.split('').all(a, self.data.blob.split('').all(b, a == b))"
`}})
	_, err := u.r.Library.Layer()
	require.NoError(t, err, "the expression compiles: only its evaluation is too costly")

	hc, requeue := u.reconcile(t)
	require.Len(t, hc.Status.Resources, 1)
	r := hc.Status.Resources[0]
	assert.Equal(t, healthv1alpha1.StatusUnknown, r.Status)
	assert.True(t, strings.HasPrefix(r.Message, "user library ConfigMap sluice-system/health-checks: "), "names where to fix it: %s", r.Message)
	assert.Contains(t, r.Message, "cost limit exceeded")
	assert.Contains(t, r.Message, "units of work")
	assert.Contains(t, r.Message, "current expression")
	assert.NotContains(t, r.Message, "waiting for the object's controller")
	assert.False(t, hc.Status.Healthy)
	ready := conditions.Get(hc.Status.Conditions, conditions.Ready)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "1 Unknown of 1")
	assert.Equal(t, DefaultTimeout, requeue, "the default timeout runs, so the HealthCheck ends TimedOut")
}

// Item 10: a suspended HealthCheck does not show the HEALTHY true it had before.
func TestReconcileSuspendedHealthCheckIsNotHealthy(t *testing.T) {
	u := newUnit(t, fmt.Sprintf(configMapCheck, `"has(self.data)"`), flags)
	hc, _ := u.reconcile(t)
	require.True(t, hc.Status.Healthy)
	assert.Equal(t, "1/1", hc.Status.Summary)

	hc.Annotations = map[string]string{suspend.Annotation: "audit, ask #platform"}
	require.NoError(t, u.hcs.Update(hc))
	hc, requeue := u.reconcile(t)
	assert.Zero(t, requeue)
	assert.False(t, hc.Status.Healthy, "not evaluated, so not healthy")
	assert.Equal(t, healthv1alpha1.SummarySuspended, hc.Status.Summary)
	assert.Nil(t, hc.Status.HealthySince)
	ready := conditions.Get(hc.Status.Conditions, conditions.Ready)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionUnknown, ready.Status)
	assert.Equal(t, "Suspended", ready.Reason)
	assert.Contains(t, ready.Message, "audit, ask #platform")
	assert.Contains(t, ready.Message, "last healthy at")
	assert.True(t, conditions.IsTrue(hc.Status.Conditions, conditions.Suspended))
	assert.Empty(t, u.watches.Owned("apps/web"), "a suspended HealthCheck watches nothing")

	writes := u.statusWrites()
	u.reconcile(t)
	assert.Equal(t, writes, u.statusWrites(), "nothing changes while suspended, so nothing is written")

	delete(hc.Annotations, suspend.Annotation)
	require.NoError(t, u.hcs.Update(hc))
	hc, _ = u.reconcile(t)
	assert.True(t, hc.Status.Healthy, "resumed, it is evaluated again")
	assert.Nil(t, conditions.Get(hc.Status.Conditions, conditions.Suspended))
}

func TestReconcileStallsWithTheFieldPathOfABadTarget(t *testing.T) {
	u := newUnit(t, `
metadata: {name: web}
spec:
  targets:
  - object: {apiVersion: "apps/v1/extra", kind: Deployment, name: web}
`)
	_, err := u.r.Reconcile(context.Background(), "apps/web")
	require.Error(t, err)
	hc, err := u.client.HealthV1alpha1().HealthChecks("apps").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	stalled := conditions.Get(hc.Status.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	assert.Contains(t, stalled.Message, "spec.targets[0].object.apiVersion")
	var updates []clienttesting.Action
	for _, a := range u.client.Actions() {
		if a.GetVerb() == "update" {
			updates = append(updates, a)
		}
	}
	assert.Len(t, updates, 1)
}

// clockFunc is a clock.PassiveClock that reads the test's time.
type clockFunc func() time.Time

func (c clockFunc) Now() time.Time                  { return c() }
func (c clockFunc) Since(t time.Time) time.Duration { return c().Sub(t) }

// The watch of a target kind keeps what the HealthCheck's check reads, not the whole object.
func TestReconcileAsksTheWatchesForTheFieldsItsCheckReads(t *testing.T) {
	u := newUnit(t, fmt.Sprintf(configMapCheck, `"self.data.mode == 'fast'"`), flags)
	hc, _ := u.reconcile(t)
	require.True(t, hc.Status.Healthy)
	need, ok := u.watches.needs["apps/web"][dynamicwatch.Scope{Resource: configMaps, Namespace: "apps"}]
	require.True(t, ok)
	assert.True(t, dynamicwatch.Covers(need, dynamicwatch.FieldsOf([]string{"data", "mode"}, []string{"metadata", "generation"}, []string{"status"})))
	assert.False(t, dynamicwatch.Covers(need, dynamicwatch.FieldsOf([]string{"data"})), "data.mode, not all of data")
	assert.False(t, dynamicwatch.Covers(need, dynamicwatch.FieldsOf([]string{"metadata", "annotations"})), "nor metadata the check does not read")
}

// An Argo CD Application moves status.sync.revision to a new commit before it syncs it: while
// the sync runs, the objects' health is credited to no revision, and the Application is listed
// as the target holding the verdict back. Once the sync of that revision finished, it is.
func TestReconcileCreditsNoVerdictWhileAnApplicationSyncs(t *testing.T) {
	u := newUnit(t, `
metadata: {name: web}
spec:
  targets:
  - application: {name: shop}
  - object: {apiVersion: v1, kind: ConfigMap, name: flags}
  healthCheckExprs:
  - {apiVersion: v1, kind: ConfigMap, current: "self.data.mode == 'fast'"}
`, flags)
	gvk := schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, gvk.GroupVersion()})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	u.r.Mapper = mapper
	scope := dynamicwatch.Scope{Resource: schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: "applications"}, Namespace: "apps"}
	app := func(operation string) *unstructured.Unstructured {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(`{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: shop, namespace: apps},
			status: {sync: {status: Synced, revision: `+sha+`}, operationState: `+operation+`}}`), &m))
		return &unstructured.Unstructured{Object: m}
	}

	u.watches.objects[scope] = []*unstructured.Unstructured{app(`{phase: Running, syncResult: {revision: ` + sha + `}}`)}
	hc, _ := u.reconcile(t)
	assert.False(t, hc.Status.Healthy)
	assert.Equal(t, sha, hc.Status.ObservedRevision, "the revision being synced")
	assert.Empty(t, hc.Status.LastHealthyRevision)
	r, ok := statusOf(hc, "Application", "shop")
	require.True(t, ok, "the Application holding the verdict back is listed: %v", hc.Status.Resources)
	assert.Equal(t, healthv1alpha1.StatusInProgress, r.Status)
	assert.Contains(t, r.Message, "Argo CD is syncing revision "+sha)

	u.watches.objects[scope] = []*unstructured.Unstructured{app(`{phase: Succeeded, syncResult: {revision: ` + sha + `}}`)}
	hc, _ = u.reconcile(t)
	assert.True(t, hc.Status.Healthy)
	assert.Equal(t, sha, hc.Status.LastHealthyRevision)
	_, ok = statusOf(hc, "Application", "shop")
	assert.False(t, ok, "a settled Application is not a target of its own")
}

func statusOf(hc *healthv1alpha1.HealthCheck, kind, name string) (healthv1alpha1.ResourceHealth, bool) {
	for _, r := range hc.Status.Resources {
		if r.Kind == kind && r.Name == name {
			return r, true
		}
	}
	return healthv1alpha1.ResourceHealth{}, false
}
