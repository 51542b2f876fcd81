package manifestrelease

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile/reconciletest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

var releases = rollbackv1.SchemeGroupVersion.WithResource("manifestreleases")

// unitRig is a Reconciler on a fake clientset. It has no source, snapshot store or applier:
// these tests stop before any of them, and reaching one would panic.
type unitRig struct {
	t      *testing.T
	client *fake.Clientset
	cache  cache.Indexer
	events *record.FakeRecorder
	r      *Reconciler
}

func newUnitRig(t *testing.T, mr *rollbackv1.ManifestRelease) *unitRig {
	t.Helper()
	g := &unitRig{t: t, events: record.NewFakeRecorder(10), cache: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	g.client = fake.NewSimpleClientset(mr) //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
	reconciletest.OptimisticConcurrency(g.client, releases)
	require.NoError(t, g.cache.Add(mr))
	g.r = &Reconciler{
		Releases: rollbacklisters.NewManifestReleaseLister(g.cache), Client: g.client, Recorder: g.events,
		Metrics: NewMetrics(prometheus.NewRegistry()), StalledRecheck: time.Minute,
		Clock:    clocktesting.NewFakePassiveClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)),
		Progress: NewProgress(),
	}
	return g
}

func release(mutate func(*rollbackv1.ManifestRelease)) *rollbackv1.ManifestRelease {
	mr := &rollbackv1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 2, ResourceVersion: "1"},
		Spec:       rollbackv1.ManifestReleaseSpec{Source: rollbackv1.ManifestSource{ConfigMaps: []rollbackv1.ConfigMapReference{{Name: "web-src"}}}},
	}
	if mutate != nil {
		mutate(mr)
	}
	return mr
}

// badFilter is a spec a person must fix: the filter is not a valid glob.
func badFilter(mr *rollbackv1.ManifestRelease) {
	mr.Spec.Test = &rollbackv1.ReleaseTest{Enable: true, Filters: []rollbackv1.TestFilter{{Name: "smoke-["}}}
}

// reconcile runs the reconciles the release asks for, one step each, until its steps end, and
// returns when the last one asks to look again.
func (g *unitRig) reconcile() (time.Duration, error) {
	g.t.Helper()
	for range maxSteps {
		res, err := g.r.Reconcile(context.Background(), "team/web")
		if err != nil || (res.RequeueAfter != nextStep && res.RequeueAfter != healthPoll) {
			return res.RequeueAfter, err
		}
	}
	g.t.Fatalf("the release took more than %d steps", maxSteps)
	return 0, nil
}

func (g *unitRig) live() *rollbackv1.ManifestRelease {
	g.t.Helper()
	mr, err := g.client.RollbackV1alpha1().ManifestReleases("team").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(g.t, err)
	return mr
}

// A spec a person must fix stalls with the reason and one Event; looking again changes nothing
// and so writes and announces nothing.
func TestInvalidReleaseStallsOnceWithOneEvent(t *testing.T) {
	g := newUnitRig(t, release(badFilter))
	_, err := g.reconcile()
	require.NoError(t, err)
	mr := g.live()
	stalled := conditions.Get(mr.Status.Conditions, conditions.Stalled)
	require.NotNil(t, stalled)
	assert.Equal(t, ReasonInvalidSpec, stalled.Reason)
	assert.Contains(t, stalled.Message, `spec.test.filters[0].name "smoke-[" is not a valid glob`)
	assert.Equal(t, int64(2), mr.Status.ObservedGeneration)
	assert.Equal(t, []string{"Warning InvalidSpec " + stalled.Message}, reconciletest.Events(g.events))

	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client), "an unchanged status is not written again")
	assert.Empty(t, reconciletest.Events(g.events), "announced once")
}

func TestSuspendedReleaseIsSkippedWithItsReason(t *testing.T) {
	g := newUnitRig(t, release(func(mr *rollbackv1.ManifestRelease) {
		badFilter(mr)
		mr.Annotations = map[string]string{suspend.Annotation: "upgrading the cluster"}
	}))
	_, err := g.reconcile()
	require.NoError(t, err)
	mr := g.live()
	s := conditions.Get(mr.Status.Conditions, conditions.Suspended)
	require.NotNil(t, s)
	assert.Equal(t, suspend.ReasonAnnotation, s.Reason)
	assert.Equal(t, "upgrading the cluster", s.Message)
	assert.Nil(t, conditions.Get(mr.Status.Conditions, conditions.Stalled), "not looked at further")

	_, err = g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 1, reconciletest.StatusUpdates(g.client))
	assert.Empty(t, reconciletest.Events(g.events))
}

// Resumed by removing the annotation, a release loses its Suspended condition, even when
// nothing else in its status changes (here it is stalled as before).
func TestResumedReleaseDropsItsSuspendedCondition(t *testing.T) {
	g := newUnitRig(t, release(badFilter))
	annotate := func(annotations map[string]string) {
		mr := g.live()
		mr.Annotations = annotations
		_, err := g.client.RollbackV1alpha1().ManifestReleases("team").Update(context.Background(), mr, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.NoError(t, g.cache.Update(g.live()))
		_, err = g.reconcile()
		require.NoError(t, err)
	}
	_, err := g.reconcile()
	require.NoError(t, err)
	annotate(map[string]string{suspend.Annotation: "upgrading the cluster"})
	require.NotNil(t, conditions.Get(g.live().Status.Conditions, conditions.Suspended))
	reconciletest.Events(g.events)
	writes := reconciletest.StatusUpdates(g.client)

	annotate(nil)
	mr := g.live()
	assert.Nil(t, conditions.Get(mr.Status.Conditions, conditions.Suspended))
	assert.True(t, conditions.IsTrue(mr.Status.Conditions, conditions.Stalled), "stalled as before")
	assert.Equal(t, writes+1, reconciletest.StatusUpdates(g.client))
	assert.Empty(t, reconciletest.Events(g.events), "the same stall is not announced again")
}

func TestMissingReleaseIsANoOpAndForgetsItsSeries(t *testing.T) {
	g := newUnitRig(t, release(nil))
	g.r.Metrics.Upgrades.WithLabelValues("team", "web", "succeeded").Inc()
	g.r.Metrics.SnapshotSecrets.WithLabelValues("team", "web").Set(1)
	require.NoError(t, g.cache.Delete(release(nil)))
	g.client.ClearActions()

	requeue, err := g.reconcile()
	require.NoError(t, err)
	assert.Zero(t, requeue)
	assert.Empty(t, g.client.Actions(), "gone from the cache: not even read")
	assert.Zero(t, testutil.CollectAndCount(g.r.Metrics.Upgrades))
	assert.Zero(t, testutil.CollectAndCount(g.r.Metrics.SnapshotSecrets))
}

// A person edits the release between the controller's read and its status write: the status goes
// onto the edited release, and the edit stays.
func TestReleaseStatusSurvivesAConcurrentEdit(t *testing.T) {
	g := newUnitRig(t, release(badFilter))
	edited := false
	g.client.PrependReactor("update", "manifestreleases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !edited {
			edited = true
			obj, err := g.client.Tracker().Get(releases, "team", "web")
			require.NoError(t, err)
			mr := obj.(*rollbackv1.ManifestRelease).DeepCopy()
			mr.Labels = map[string]string{"team": "payments"}
			rv, _ := strconv.Atoi(mr.ResourceVersion)
			mr.ResourceVersion = strconv.Itoa(rv + 1)
			require.NoError(t, g.client.Tracker().Update(releases, mr, "team"))
		}
		return false, nil, nil
	})
	_, err := g.reconcile()
	require.NoError(t, err)
	mr := g.live()
	assert.Equal(t, "payments", mr.Labels["team"])
	assert.True(t, conditions.IsTrue(mr.Status.Conditions, conditions.Stalled))
	assert.Equal(t, 2, reconciletest.StatusUpdates(g.client), "the conflict, then the write onto the live release")
	assert.Len(t, reconciletest.Events(g.events), 1)
}

// The steps of a release write the status from the copy the step before stored: here Ready for
// the version deployed, then the refresh request handled. The second step lands on top of the
// first, never in its place.
func TestReleaseStepsWrittenFromOneCopyAllLand(t *testing.T) {
	ctx := context.Background()
	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-src", ResourceVersion: "7"},
		Data: map[string]string{"web.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"}}
	mr := release(func(mr *rollbackv1.ManifestRelease) {
		mr.Annotations = map[string]string{rollbackv1.RequestedAtAnnotation: "now"}
		mr.Status.UpgradeNumber, mr.Status.DeployedVersion = 1, "v1"
	})
	g := newUnitRig(t, mr)
	g.r.Sources = &Sources{Kube: kubefake.NewClientset(src), Sluice: g.client, MaxSize: 1 << 20}
	g.r.Snapshots = &snapshot.Store{}
	g.r.Applier = &apply.Applier{Dynamic: acceptingApplies(), Mapper: configMapMapper()}
	fetched, err := g.r.Sources.Fetch(ctx, mr)
	require.NoError(t, err)
	digest, err := snapshot.Digest(fetched.Files, g.r.Snapshots.Options)
	require.NoError(t, err)
	deployed := g.live()
	deployed.Status.DeployedDigest = digest
	_, err = g.client.RollbackV1alpha1().ManifestReleases("team").UpdateStatus(ctx, deployed, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, g.cache.Update(g.live()))

	requeue, err := g.reconcile()
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, requeue, "looked at again after spec.interval's default")
	live := g.live()
	assert.Equal(t, "now", live.Status.LastHandledReconcileAt, "the request is marked handled")
	ready := conditions.Get(live.Status.Conditions, conditions.Ready)
	require.NotNil(t, ready, "and the step before it is still there")
	assert.Equal(t, ReasonDeployed, ready.Reason)
	assert.Equal(t, "v1 (snapshot 1) is deployed", ready.Message)
}

// acceptingApplies is a dynamic client that accepts every server-side apply: the drift
// correction of a deployed release applies it again.
func acceptingApplies() *dynamicfake.FakeDynamicClient {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("patch", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &unstructured.Unstructured{Object: map[string]any{}}, nil
	})
	return client
}

// resettableMapper knows ConfigMaps.
type resettableMapper struct{ *meta.DefaultRESTMapper }

func (resettableMapper) Reset() {}

func configMapMapper() resettableMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return resettableMapper{m}
}
