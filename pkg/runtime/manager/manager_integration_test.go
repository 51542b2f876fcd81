package manager_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
)

var env *testenv.Env

// Only the Gate CRD: the runtime is tested on its own, not against every group.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{SluiceCRDs: []string{"gating.sluice.dev_gates.yaml"}}, &env)
}

// gateMarker is a minimal reconciler: it marks Gates Ready, honouring suspend, and records which
// keys it reconciled so tests can tell which manager did the work.
type gateMarker struct {
	m        *manager.Manager
	handled  sync.Map
	count    atomic.Int64
	fieldMgr string
}

func (r *gateMarker) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, controller.Permanent(err)
	}
	gate, err := r.m.SluiceInformers.Gating().V1alpha1().Gates().Lister().Gates(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	g := gate.DeepCopy()
	state := suspend.Get(g, g.Spec.Suspend)
	suspend.Report(&g.Status.Conditions, g.Generation, state)
	if !state.Suspended {
		conditions.MarkReady(&g.Status.Conditions, g.Generation, conditions.ReasonSucceeded, fmt.Sprintf("closed=%t", g.Spec.Closed))
		g.Status.ObservedGeneration = g.Generation
		r.handled.Store(key, true)
		r.count.Add(1)
	}
	_, err = r.m.Sluice.GatingV1alpha1().Gates(ns).UpdateStatus(ctx, g, metav1.UpdateOptions{FieldManager: r.fieldMgr})
	return controller.Result{}, err
}

type running struct {
	m       *manager.Manager
	r       *gateMarker
	stop    func()
	serving atomic.Bool
}

func startManager(t *testing.T, name string, mutate func(*options.Options), extraSynced cache.InformerSynced) *running {
	t.Helper()
	opts := options.Defaults(name)
	opts.MetricsBindAddress = "127.0.0.1:0"
	opts.HealthProbeBindAddress = "127.0.0.1:0"
	opts.LeaderElectionNamespace = "default"
	if mutate != nil {
		mutate(&opts)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := manager.New(name, opts, env.Config, log)
	require.NoError(t, err)
	r := &gateMarker{m: m, fieldMgr: name}
	c := m.NewController("test-gates", r)
	informer := m.SluiceInformers.Gating().V1alpha1().Gates().Informer()
	_, err = informer.AddEventHandler(handler.EnqueueObject(c))
	require.NoError(t, err)
	if extraSynced != nil {
		m.WaitFor(extraSynced)
	}
	run := &running{m: m, r: r}
	m.AddServer(func(ctx context.Context) error {
		run.serving.Store(true)
		<-ctx.Done()
		return nil
	})
	run.stop = testenv.RunManager(t, m)
	return run
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("t-%d", time.Now().UnixNano())
	_, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns
}

func createGate(t *testing.T, ns, name string, mutate func(*gatingv1alpha1.Gate)) {
	t.Helper()
	g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if mutate != nil {
		mutate(g)
	}
	_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), g, metav1.CreateOptions{})
	require.NoError(t, err)
}

func waitGate(t *testing.T, ns, name string, cond func(*gatingv1alpha1.Gate) bool) *gatingv1alpha1.Gate {
	t.Helper()
	return testenv.WaitForObject(t, 20*time.Second, env.Sluice.GatingV1alpha1().Gates(ns), name, cond)
}

func TestStatusAndConditionsAreWritten(t *testing.T) {
	testenv.SkipIfShort(t)
	startManager(t, "status-test", nil, nil)
	ns := newNamespace(t)
	createGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = true })

	g := waitGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Ready) })
	assert.Equal(t, g.Generation, g.Status.ObservedGeneration)
	ready := conditions.Get(g.Status.Conditions, conditions.Ready)
	assert.Equal(t, "closed=true", ready.Message)
	assert.Equal(t, g.Generation, ready.ObservedGeneration)

	managers := map[string]bool{}
	for _, mf := range g.ManagedFields {
		if mf.Subresource == "status" {
			managers[mf.Manager] = true
		}
	}
	assert.True(t, managers["status-test"], "status is written with the controller's field manager, got %v", managers)
}

func TestSuspendedObjectsAreSkippedWithTheirReason(t *testing.T) {
	testenv.SkipIfShort(t)
	run := startManager(t, "suspend-test", nil, nil)
	ns := newNamespace(t)
	createGate(t, ns, "by-field", func(g *gatingv1alpha1.Gate) { g.Spec.Suspend = true })
	createGate(t, ns, "by-annotation", func(g *gatingv1alpha1.Gate) {
		g.Annotations = map[string]string{suspend.Annotation: "change freeze for the audit, ask #platform"}
	})
	createGate(t, ns, "active", nil)

	byField := waitGate(t, ns, "by-field", func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Suspended) })
	byAnnotation := waitGate(t, ns, "by-annotation", func(g *gatingv1alpha1.Gate) bool {
		return conditions.IsTrue(g.Status.Conditions, conditions.Suspended)
	})
	waitGate(t, ns, "active", func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Ready) })

	assert.Equal(t, suspend.ReasonSpec, conditions.Get(byField.Status.Conditions, conditions.Suspended).Reason)
	annotationCond := conditions.Get(byAnnotation.Status.Conditions, conditions.Suspended)
	assert.Equal(t, suspend.ReasonAnnotation, annotationCond.Reason)
	assert.Equal(t, "change freeze for the audit, ask #platform", annotationCond.Message)
	for _, g := range []*gatingv1alpha1.Gate{byField, byAnnotation} {
		assert.Nil(t, conditions.Get(g.Status.Conditions, conditions.Ready), "suspended gate %s must not be reconciled", g.Name)
		_, handled := run.r.handled.Load(ns + "/" + g.Name)
		assert.False(t, handled)
	}

	// Removing the annotation resumes the object; the annotation never bumped its generation.
	var generation int64
	_, err := testenv.Update(context.Background(), env.Sluice.GatingV1alpha1().Gates(ns), "by-annotation", func(g *gatingv1alpha1.Gate) {
		generation = g.Generation
		suspend.Unset(g)
	})
	require.NoError(t, err)
	resumed := waitGate(t, ns, "by-annotation", func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Ready) })
	assert.Nil(t, conditions.Get(resumed.Status.Conditions, conditions.Suspended))
	assert.Equal(t, generation, resumed.Generation)
}

func TestLeaderElectionHandsOverWhenTheLeaderStops(t *testing.T) {
	testenv.SkipIfShort(t)
	lease := fmt.Sprintf("le-%d", time.Now().UnixNano())
	fast := func(o *options.Options) {
		o.LeaderElect = true
		o.LeaderElectionID = lease
		o.LeaseDuration = 3 * time.Second
		o.RenewDeadline = 2 * time.Second
		o.RetryPeriod = 200 * time.Millisecond
	}
	a := startManager(t, "le-a", fast, nil)
	b := startManager(t, "le-b", fast, nil)
	ns := newNamespace(t)

	createGate(t, ns, "first", nil)
	waitGate(t, ns, "first", func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Ready) })
	_, byA := a.r.handled.Load(ns + "/first")
	_, byB := b.r.handled.Load(ns + "/first")
	require.True(t, byA != byB, "exactly one manager reconciles while both run (a=%t b=%t)", byA, byB)
	leader, standby := a, b
	if byB {
		leader, standby = b, a
	}
	assert.True(t, leader.m.Leading())
	assert.False(t, standby.m.Leading())
	assert.True(t, a.serving.Load() && b.serving.Load(), "servers run on the standby too")
	holder := leaseHolder(t, lease)
	require.NotEmpty(t, holder)

	leader.stop()
	// A released Lease is taken over after a retry period, not after the lease duration.
	testenv.WaitFor(t, 10*time.Second, func() (bool, error) {
		h := leaseHolder(t, lease)
		return h != "" && h != holder, nil
	}, "another replica takes the Lease")
	createGate(t, ns, "second", nil)
	waitGate(t, ns, "second", func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Ready) })
	_, byStandby := standby.r.handled.Load(ns + "/second")
	assert.True(t, byStandby, "the standby took over the work")
	assert.True(t, standby.m.Leading())
}

func leaseHolder(t *testing.T, name string) string {
	l, err := env.Kube.CoordinationV1().Leases("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	require.NoError(t, err)
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestProbesAndMetrics(t *testing.T) {
	testenv.SkipIfShort(t)
	var synced atomic.Bool
	run := startManager(t, "probe-test", nil, func() bool { return synced.Load() })
	addrs, err := run.m.Probes.Addrs(context.Background())
	require.NoError(t, err)

	status := func(path string) int {
		resp, err := http.Get("http://" + addrs.Probes + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, status("/livez"))
	assert.Equal(t, http.StatusServiceUnavailable, status("/readyz"), "not ready while a cache is unsynced")
	synced.Store(true)
	testenv.WaitFor(t, 10*time.Second, func() (bool, error) { return status("/readyz") == http.StatusOK, nil }, "/readyz")

	ns := newNamespace(t)
	createGate(t, ns, "metered", nil)
	waitGate(t, ns, "metered", func(g *gatingv1alpha1.Gate) bool { return conditions.IsTrue(g.Status.Conditions, conditions.Ready) })

	// The condition metric is read from the informer cache, which may see the Ready status a
	// little after the API server does: wait for it, not only for a reconcile.
	metered := fmt.Sprintf(`sluice_object_condition{kind="Gate",name="metered",namespace=%q,reason="Succeeded",status="True",type="Ready"} 1`, ns)
	var body string
	require.NoError(t, testenv.Wait(context.Background(), 10*time.Second, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + addrs.Metrics + "/metrics")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `sluice_controller_reconcile_total{controller="test-gates",result="success"}`) &&
			strings.Contains(body, metered), err
	}), body)
	// client-go's names and labels, as the usual mixins query them, beside Sluice's own. The
	// rest_client_* and leader_election_* hooks are taken by controller-runtime's init in this
	// test binary (envtest imports it); pkg/runtime/metrics tests them, and the monitoring test
	// scrapes them from the real controller binaries.
	for _, want := range []string{
		`workqueue_adds_total{controller="test-gates",name="test-gates"}`,
		`workqueue_depth{controller="test-gates",name="test-gates"}`,
		`workqueue_queue_duration_seconds_bucket{controller="test-gates",name="test-gates"`,
		`workqueue_retries_total{controller="test-gates",name="test-gates"}`,
		`sluice_controller_reconcile_duration_seconds_bucket{controller="test-gates"`,
	} {
		assert.Contains(t, body, want)
	}
}

// A controller with nothing to run yet (the rollback-controller today) must keep its Lease until it
// is stopped, not give it up and exit as if the Lease were lost: a crash loop in a cluster.
func TestLeaderWithNoControllersKeepsLeadingUntilStopped(t *testing.T) {
	testenv.SkipIfShort(t)
	lease := fmt.Sprintf("idle-%d", time.Now().UnixNano())
	opts := options.Defaults("idle-controller")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.LeaderElect, opts.LeaderElectionNamespace, opts.LeaderElectionID = true, "default", lease
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 200*time.Millisecond
	m, err := manager.New("idle-controller", opts, env.Config, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	// Leading, and still renewing the Lease after taking it: the manager did not return.
	require.NoError(t, testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("Run returned while it should lead: %v", err)
		default:
		}
		l, err := env.Kube.CoordinationV1().Leases("default").Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil {
			return false, nil
		}
		return m.Leading() && l.Spec.RenewTime.After(l.Spec.AcquireTime.Time), nil
	}))
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not stop within 30s")
	}
}
