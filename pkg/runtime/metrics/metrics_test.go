package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

func TestWorkqueueMetricsUseClientGoNamesWithNameAndControllerLabels(t *testing.T) {
	reg := NewRegistry()
	// A retry an hour away stays out of the queue for the test: depth counts only a and b.
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "gates", MetricsProvider: reg.Workqueue})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	q.AddRateLimited("c")

	want := `
# HELP workqueue_adds_total Adds handled by the workqueue.
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="gates",name="gates"} 2
# HELP workqueue_depth Current depth of the workqueue.
# TYPE workqueue_depth gauge
workqueue_depth{controller="gates",name="gates"} 2
# HELP workqueue_retries_total Retries handled by the workqueue.
# TYPE workqueue_retries_total counter
workqueue_retries_total{controller="gates",name="gates"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "workqueue_adds_total", "workqueue_depth", "workqueue_retries_total"))
}

func TestConditionsReportsEveryConditionOfTrackedObjects(t *testing.T) {
	reg := NewRegistry()
	gates := cache.NewStore(cache.MetaNamespaceKeyFunc)
	require.NoError(t, gates.Add(&gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "prod"},
		Status: gatingv1alpha1.GateStatus{Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "InvalidSpec"},
			{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "InvalidSpec"},
		}},
	}))
	require.NoError(t, gates.Add(&gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "new"}}))
	// A kind without status.conditions is skipped, not a panic.
	others := cache.NewStore(cache.MetaNamespaceKeyFunc)
	require.NoError(t, others.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "cm"}}))
	reg.Conditions.Track(gates, others)

	want := `
# HELP sluice_object_condition Conditions of the Sluice objects this controller watches: 1 for each condition, labelled with its type, status and reason.
# TYPE sluice_object_condition gauge
sluice_object_condition{kind="Gate",name="prod",namespace="apps",reason="InvalidSpec",status="False",type="Ready"} 1
sluice_object_condition{kind="Gate",name="prod",namespace="apps",reason="InvalidSpec",status="True",type="Stalled"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_object_condition"))

	// Read at scrape time: a fixed object reports its new conditions, nothing stale.
	require.NoError(t, gates.Update(&gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "prod"},
		Status: gatingv1alpha1.GateStatus{Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded"},
		}},
	}))
	want = `
# HELP sluice_object_condition Conditions of the Sluice objects this controller watches: 1 for each condition, labelled with its type, status and reason.
# TYPE sluice_object_condition gauge
sluice_object_condition{kind="Gate",name="prod",namespace="apps",reason="Succeeded",status="True",type="Ready"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_object_condition"))
}

// client-go accepts one provider per process; every registry still exports the same collectors.
func TestEveryRegistryExportsTheClientGoCollectors(t *testing.T) {
	first, second := NewRegistry(), NewRegistry()
	clientGo.leader.WithLabelValues("shared-lease").Set(1)
	defer clientGo.leader.DeleteLabelValues("shared-lease")
	for _, reg := range []*Registry{first, second} {
		n, err := testutil.GatherAndCount(reg, "leader_election_master_status")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	}
}

// The REST client and leader-election hooks report into every registry. This test binary does not
// link controller-runtime, whose init would take client-go's one-per-process hooks first.
func TestClientGoReportsRESTCallsAndLeadership(t *testing.T) {
	reg := NewRegistry()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
	}))
	defer api.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	require.NoError(t, err)
	_, err = client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	require.NoError(t, err)
	host := strings.TrimPrefix(api.URL, "http://")
	requests, err := testutil.GatherAndCount(reg, "rest_client_requests_total", "rest_client_request_duration_seconds", "rest_client_rate_limiter_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 3, requests, "one series each for the GET to %s", host)
	assert.Equal(t, 1.0, testutil.ToFloat64(clientGo.requests.WithLabelValues("200", "GET", host)))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leading := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "default", Name: "metrics-test"},
			Client:     fake.NewClientset().CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "me"},
		},
		Name:          "metrics-test",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(leading) },
			OnStoppedLeading: func() {},
		},
	})
	require.NoError(t, err)
	assert.Equal(t, 0.0, testutil.ToFloat64(clientGo.leader.WithLabelValues("metrics-test")), "standing by")
	go elector.Run(ctx)
	<-leading
	assert.Equal(t, 1.0, testutil.ToFloat64(clientGo.leader.WithLabelValues("metrics-test")), "leading")
}
