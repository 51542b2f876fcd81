package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	sluicefake "github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	promoterlisters "github.com/sluicehq/sluice/api/generated/listers/promoter/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm/gitea"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
	"github.com/sluicehq/sluice/promoter-controller/internal/metrics"
)

const testHookSecret = "hook-secret"

var pushToApp = []byte(`{"ref":"refs/heads/dev-next","before":"","after":"","repository":{"name":"app","owner":{"login":"acme"}}}`)

type recordingQueue struct {
	mu   sync.Mutex
	keys []string
}

func (q *recordingQueue) Enqueue(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.keys = append(q.keys, key)
}

// receiverTest is a receiver on namespace "team": a Gitea ScmProvider "forge", ScmRepositories
// "app" (acme/app) and "other" (acme/other), and strategies "app" and "app-canary" on app and
// "other" on other.
type receiverTest struct {
	receiver *Receiver
	client   *sluicefake.Clientset
	queue    *recordingQueue
	registry *prometheus.Registry
	leading  bool
}

func newReceiverTest(t *testing.T) *receiverTest {
	t.Helper()
	provider := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "forge", ResourceVersion: "1"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: "https://gitea.example.com",
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}
	repo := func(name string) *scmv1alpha1.ScmRepository {
		return &scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: scmv1alpha1.ScmRepositorySpec{URL: "https://gitea.example.com/acme/" + name, Owner: "acme", Name: name,
				ProviderRef: scmv1alpha1.LocalObjectReference{Name: "forge"}}}
	}
	strategy := func(name, repo string) *promoterv1alpha1.PromotionStrategy {
		return &promoterv1alpha1.PromotionStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: repo}}}
	}
	objects := []runtime.Object{provider, repo("app"), repo("other"), strategy("app", "app"), strategy("app-canary", "app"), strategy("other", "other")}
	indexer := func(objs ...runtime.Object) cache.Indexer {
		i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, o := range objs {
			require.NoError(t, i.Add(o))
		}
		return i
	}
	kube := kubefake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "gitea"},
		Data:       map[string][]byte{scmv1alpha1.SecretKeyToken: []byte("t"), scmv1alpha1.SecretKeyWebhookSecret: []byte(testHookSecret)},
	})
	client := sluicefake.NewSimpleClientset(objects...) //nolint:staticcheck // NewClientset needs OpenAPI schemas the generated clientset does not carry.
	rt := &receiverTest{client: client, queue: &recordingQueue{}, registry: prometheus.NewRegistry()}
	rt.receiver = &Receiver{
		Kube: kube, Client: rt.client, Queue: rt.queue, Metrics: metrics.New(rt.registry),
		Providers:  scmlisters.NewScmProviderLister(indexer(objects[0])),
		Repos:      scmlisters.NewScmRepositoryLister(indexer(objects[1:3]...)),
		Strategies: promoterlisters.NewPromotionStrategyLister(indexer(objects[3:]...)),
		Leading:    func() bool { return rt.leading },
	}
	return rt
}

// deliver posts body to the receiver as Gitea would, signed with secret ("" for unsigned), and
// returns the answer's status.
func (rt *receiverTest) deliver(event, secret string, body []byte) int {
	req := httptest.NewRequest(http.MethodPost, WebhookPath+"team/forge", bytes.NewReader(body))
	req.Header.Set(gitea.EventHeader, event)
	if secret != "" {
		req.Header.Set(gitea.SignatureHeader, webhook.SignHMACSHA256([]byte(secret), body))
	}
	w := httptest.NewRecorder()
	rt.receiver.Handler().ServeHTTP(w, req)
	return w.Code
}

// refreshPatches are the patches sent, as "strategy=annotation value", in order.
func (rt *receiverTest) refreshPatches(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, a := range rt.client.Actions() {
		if a.GetVerb() != "patch" {
			continue
		}
		pa := a.(k8stesting.PatchAction)
		require.Equal(t, "promotionstrategies", pa.GetResource().Resource)
		out = append(out, pa.GetName()+"="+annotationIn(t, pa.GetPatch()))
	}
	return out
}

func (rt *receiverTest) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range rt.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a)
		}
	}
	return out
}

func (rt *receiverTest) deliveries(t *testing.T, result string) float64 {
	t.Helper()
	families, err := rt.registry.Gather()
	require.NoError(t, err)
	var n float64
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if mf.GetName() == "sluice_promoter_webhook_deliveries_total" && l.GetName() == "result" && l.GetValue() == result {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

func annotationIn(t *testing.T, patch []byte) string {
	t.Helper()
	var p struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(patch, &p))
	return p.Metadata.Annotations[promoterv1alpha1.RefreshAnnotation]
}

func (rt *receiverTest) refreshOf(t *testing.T, name string) string {
	t.Helper()
	ps, err := rt.client.PromoterV1alpha1().PromotionStrategies("team").Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return ps.Annotations[promoterv1alpha1.RefreshAnnotation]
}

// A replica that does not lead passes a verified delivery on by setting the refresh annotation of
// exactly the strategies on the event's repository, and enqueues nothing itself.
func TestStandbyForwardsASignedDeliveryThroughTheRefreshAnnotation(t *testing.T) {
	rt := newReceiverTest(t)
	before := time.Now()
	assert.Equal(t, http.StatusAccepted, rt.deliver("push", testHookSecret, pushToApp))

	patches := rt.refreshPatches(t)
	require.Len(t, patches, 2, "one patch per strategy on acme/app: %v", patches)
	names := []string{}
	for _, name := range []string{"app", "app-canary", "other"} {
		if v := rt.refreshOf(t, name); v != "" {
			names = append(names, name)
			at, err := time.Parse(time.RFC3339Nano, v)
			require.NoError(t, err, "the annotation is a time")
			assert.False(t, at.Before(before.Truncate(time.Nanosecond)), "set by this delivery: %s", v)
		}
	}
	sort.Strings(names)
	assert.Equal(t, []string{"app", "app-canary"}, names)
	assert.Empty(t, rt.queue.keys, "a standby's queue runs nothing")
	assert.Equal(t, 1.0, rt.deliveries(t, "forwarded"))
}

// The leader enqueues and writes nothing.
func TestLeaderEnqueuesWithoutWriting(t *testing.T) {
	rt := newReceiverTest(t)
	rt.leading = true
	assert.Equal(t, http.StatusAccepted, rt.deliver("push", testHookSecret, pushToApp))
	assert.ElementsMatch(t, []string{"team/app", "team/app-canary"}, rt.queue.keys)
	assert.Empty(t, rt.writes())
	assert.Equal(t, 1.0, rt.deliveries(t, "accepted"))
}

// Unsigned, badly signed, malformed and uninteresting deliveries write nothing on a standby:
// a flood of them cannot be turned into API writes.
func TestStandbyWritesNothingForDeliveriesItDoesNotActOn(t *testing.T) {
	rt := newReceiverTest(t)
	for range 50 {
		assert.Equal(t, http.StatusUnauthorized, rt.deliver("push", "", pushToApp))
		assert.Equal(t, http.StatusUnauthorized, rt.deliver("push", "not-the-secret", pushToApp))
	}
	assert.Equal(t, http.StatusBadRequest, rt.deliver("push", testHookSecret, []byte(`{"ref":`)))
	assert.Equal(t, http.StatusAccepted, rt.deliver("issues", testHookSecret, []byte(`{"action":"opened"}`)))
	assert.Empty(t, rt.writes())
	assert.Equal(t, 100.0, rt.deliveries(t, "refused"))
	assert.Zero(t, rt.deliveries(t, "forwarded"))
}

// A patch the API server refuses (the chart's RBAC without patch, say) is answered 503 so the
// SCM shows the delivery as failed, and counted.
func TestStandbyAnswers503WhenItCannotForward(t *testing.T) {
	rt := newReceiverTest(t)
	rt.client.PrependReactor("patch", "promotionstrategies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "promoter.sluice.dev", Resource: "promotionstrategies"}, "app", errors.New("no patch"))
	})
	assert.Equal(t, http.StatusServiceUnavailable, rt.deliver("push", testHookSecret, pushToApp))
	assert.Equal(t, 1.0, rt.deliveries(t, "unforwarded"))
	assert.Zero(t, rt.deliveries(t, "forwarded"))
}

// A replica whose caches are not filled cannot tell which strategies a delivery is about.
func TestUnreadyReplicaAnswers503(t *testing.T) {
	rt := newReceiverTest(t)
	rt.receiver.Ready = func() bool { return false }
	assert.Equal(t, http.StatusServiceUnavailable, rt.deliver("push", testHookSecret, pushToApp))
	assert.Empty(t, rt.writes())
	assert.Equal(t, 1.0, rt.deliveries(t, "unready"))
}

// A burst of deliveries for one strategy is coalesced into at most two patches: the first, and
// one a window later that every delivery arriving meanwhile waits for, so none is answered
// before a patch sent after it arrived.
func TestStandbyCoalescesABurstWithoutLosingTheLastDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newReceiverTest(t)
		start := time.Now()
		assert.Equal(t, http.StatusAccepted, rt.deliver("push", testHookSecret, pushToApp))

		arrived := make([]time.Time, 20)
		answered := make([]time.Time, 20)
		var wg sync.WaitGroup
		for i := range arrived {
			time.Sleep(30 * time.Millisecond)
			arrived[i] = time.Now()
			wg.Go(func() {
				assert.Equal(t, http.StatusAccepted, rt.deliver("push", testHookSecret, pushToApp))
				answered[i] = time.Now()
			})
		}
		wg.Wait()

		patches := rt.refreshPatches(t)
		require.Len(t, patches, 4, "two patches for each of the two strategies: %v", patches)
		last, err := time.Parse(time.RFC3339Nano, rt.refreshOf(t, "app"))
		require.NoError(t, err)
		assert.Equal(t, start.Add(forwardWindow).UTC(), last.UTC(), "the second patch waits for its turn")
		for i := range arrived {
			assert.False(t, last.Before(arrived[i]), "delivery %d arrived after the last patch", i)
			assert.False(t, answered[i].Before(last), "delivery %d answered before its patch", i)
		}
		assert.Equal(t, 21.0, rt.deliveries(t, "forwarded"))
	})
}

// Deliveries a window apart each send their patch, each with a new value.
func TestStandbyPatchesEachDeliveryAWindowApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newReceiverTest(t)
		var values []string
		for range 3 {
			assert.Equal(t, http.StatusAccepted, rt.deliver("push", testHookSecret, pushToApp))
			values = append(values, rt.refreshOf(t, "app"))
			time.Sleep(forwardWindow)
		}
		assert.Len(t, rt.refreshPatches(t), 6)
		assert.NotEqual(t, values[0], values[1])
		assert.NotEqual(t, values[1], values[2])
	})
}
