package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm/gitea"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	"github.com/sluicehq/sluice/promoter-controller/internal/setup"
	receiver "github.com/sluicehq/sluice/promoter-controller/internal/webhook"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// The controller runs as the chart's ServiceAccount, by impersonation, through a whole
// promotion with a credentialed repository, a CommitStatus and a Gate: the chart's RBAC is enough.
func TestPromotionUnderTheChartsServiceAccount(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	f := newFixture(t)
	// The chart reads Secrets in no namespace by default: the credentials' namespace is listed.
	sa := charts.ServiceAccountForTest(t, env, "promoter-controller", f.ns, []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets"}, {Verb: "watch", Resource: "secrets"},
		{Verb: "get", Resource: "secrets", Namespace: "kube-system"},
		// Only the webhook receiver writes a strategy (its refresh annotation).
		{Verb: "patch", Group: promoterv1alpha1.GroupName, Resource: "promotionstrategies"},
		// It asks GitRepositories to fetch, and touches no other Flux kind.
		{Verb: "patch", Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"},
		{Verb: "patch", Group: "source.toolkit.fluxcd.io", Resource: "ocirepositories"}}...)
	authed := gittest.NewServer(t, gittest.WithBasicAuth("sluice", "s3cret"))
	f.srv, f.repo = authed, authed.CreateRepo(t, "app")
	env.UseBasicAuth(t, f.ns, "app", authed.URL("app"), "sluice", "s3cret")

	f.bootstrap("dev", "prod")
	installFluxCRDs(t)
	f.createGitRepository("prod", authed.URL("app"), map[string]any{"branch": "prod"})
	requested := f.watchRequestedAt()
	f.setGate("freeze", true)
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod", Gates: &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "freeze"}}}}}
	})
	startPromoter(t, sa, t.TempDir())
	d1 := f.dryCommit("change")
	f.hydrate(d1, "dev", "prod")
	dev := f.waitEnv("dev", "promoted", testenv.ActiveOn(d1))
	f.setStatus("health", dev.Active.HydratedSHA, "success")
	f.waitEnv("prod", "promoted", testenv.ActiveOn(d1))
	f.waitRequested(requested, "prod", 1) // watched and patched under the chart's RBAC
	require.NoError(t, testenv.Wait(ctx, 20*time.Second, func(context.Context) (bool, error) {
		return len(f.events(promotionstrategy.EventPromotionCompleted)) >= 2, nil
	}), "events recorded under the chart's RBAC")
}

// A signed push delivery re-evaluates the strategy at once, long before its poll; an unsigned
// one is refused.
func TestWebhookTriggersAReconcile(t *testing.T) {
	f := newFixture(t)
	f.webhookStrategy()
	hooks, addr := webhookConfig(t, t.TempDir())
	m, _ := startPromoterManager(t, env.Config, hooks, nil)
	f.waitEnv("dev", "first reconcile", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.HydratedSHA != "" })

	// The first status write wakes the strategy once more; that reconcile ends before the change
	// lands, so that only the delivery can bring it in.
	f.settle(m)
	d1 := f.dryCommit("change")
	f.hydrateUnannounced(d1, "dev")
	url := fmt.Sprintf("http://%s%s%s/forge", addr, receiver.WebhookPath, f.ns)

	mark := observed(m).mark()
	assert.Equal(t, http.StatusUnauthorized, postPush(t, url, ""))
	assert.False(t, observed(m).enqueuedSince(mark, "promotionstrategy", f.ns+"/app"), "an unsigned delivery wakes nothing")

	assert.Equal(t, http.StatusAccepted, postPush(t, url, hookSecret))
	assert.True(t, observed(m).enqueuedSince(mark, "promotionstrategy", f.ns+"/app"), "the delivery wakes the strategy before it is answered")
	assert.Empty(t, f.refreshAnnotation(), "the leader enqueues without writing")
	f.waitEnv("dev", "proposal seen after the webhook", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Proposed.DrySHA == d1 })
}

// webhookStrategy puts the repository on a Gitea ScmProvider "forge" whose Secret holds
// hookSecret, and creates a one-environment strategy that polls hourly: only a delivery wakes it
// in a test. The Gitea behind the provider is not running: only the proposal is observed.
func (f *fixture) webhookStrategy() {
	f.t.Helper()
	_, err := env.Kube.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data:       map[string][]byte{scmv1alpha1.SecretKeyToken: []byte("t"), scmv1alpha1.SecretKeyWebhookSecret: []byte(hookSecret)},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "forge"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: "http://127.0.0.1:1", AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	_, err = testenv.Update(f.ctx, env.Sluice.ScmV1alpha1().ScmRepositories(f.ns), "app", func(gr *scmv1alpha1.ScmRepository) {
		gr.Spec.ProviderRef.Name = "forge"
	})
	require.NoError(f.t, err)
	f.bootstrap("dev")
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		oneEnv(s)
		s.Interval = &metav1.Duration{Duration: time.Hour}
	})
}

// postPush posts Gitea's push to dev-next of acme/app to url, signed with secret ("" for
// unsigned), and returns the answer's status.
func postPush(t *testing.T, url, secret string) int {
	t.Helper()
	body := []byte(`{"ref":"refs/heads/dev-next","before":"","after":"","repository":{"name":"app","owner":{"login":"acme"}}}`)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(gitea.EventHeader, "push")
	if secret != "" {
		req.Header.Set(gitea.SignatureHeader, webhook.SignHMACSHA256([]byte(secret), body))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func (f *fixture) refreshAnnotation() string {
	f.t.Helper()
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{})
	require.NoError(f.t, err)
	return ps.Annotations[promoterv1alpha1.RefreshAnnotation]
}

// A delivery the Service sends to a replica that does not lead reaches the leader: the standby,
// running under the chart's ServiceAccount (with webhook.enabled), verifies it and sets the
// strategy's refresh annotation before answering; the leader's informer sees that and
// reconciles the strategy, which finds the pushed change. An unsigned delivery writes nothing.
func TestWebhookOnAStandbyReachesTheLeader(t *testing.T) {
	f := newFixture(t)
	charts.InstallForTest(t, env, "promoter-controller", "sluice-system", "promoter-controller", "webhook.enabled=true",
		"secretAccess.namespaces={"+f.ns+"}")
	// The chart's Lease, held by a replica that never lets go: the receiver under test stays a standby.
	holder, forever, lease := "another-replica", int32(3600), "promoter-controller-leader"
	now := metav1.NewMicroTime(time.Now())
	_, err := env.Kube.CoordinationV1().Leases("sluice-system").Create(f.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &forever, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoordinationV1().Leases("sluice-system").Delete(context.Background(), lease, metav1.DeleteOptions{})
	})

	f.webhookStrategy()
	leader, _ := startPromoterManager(t, env.Config, setup.Config{CacheDir: t.TempDir()}, nil)
	hooks, addr := webhookConfig(t, t.TempDir())
	standby, _ := startPromoterManager(t, env.Impersonate("sluice-system", "promoter-controller"), hooks, func(o *options.Options) {
		o.LeaderElect = true
		o.LeaderElectionNamespace = "sluice-system"
		o.LeaderElectionID = lease
	})
	f.waitEnv("dev", "first reconcile", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.HydratedSHA != "" })
	testenv.WaitFor(t, 30*time.Second, func() (bool, error) { return standby.Probes.Ready(), nil }, "the standby's caches are filled")
	require.False(t, standby.Leading())

	f.settle(leader)
	d1 := f.dryCommit("change")
	f.hydrateUnannounced(d1, "dev")
	url := fmt.Sprintf("http://%s%s%s/forge", addr, receiver.WebhookPath, f.ns)

	assert.Equal(t, http.StatusUnauthorized, postPush(t, url, ""))
	assert.Empty(t, f.refreshAnnotation(), "an unsigned delivery writes nothing")

	mark := observed(leader).mark()
	assert.Equal(t, http.StatusAccepted, postPush(t, url, hookSecret))
	refresh := f.refreshAnnotation()
	require.NotEmpty(t, refresh, "the standby set the refresh annotation before answering")
	assert.Equal(t, 1.0, counterSum(t, standby.Metrics.Registry, "sluice_promoter_webhook_deliveries_total", "result", "forwarded"))

	testenv.WaitFor(t, 30*time.Second, func() (bool, error) {
		return observed(leader).enqueuedSince(mark, "promotionstrategy", f.ns+"/app"), nil
	}, "the leader re-queues the strategy on the annotation's change")
	f.waitEnv("dev", "proposal seen after the forwarded delivery", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Proposed.DrySHA == d1 })
	ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(f.ns).Get(f.ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, refresh, ps.Status.LastHandledRefresh)
	assert.False(t, standby.Leading(), "the standby never led: the leader did the work")
}
