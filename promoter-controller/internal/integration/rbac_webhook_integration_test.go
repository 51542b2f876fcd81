package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm/gitea"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
	"github.com/sluicehq/sluice/promoter-controller/internal/promotionstrategy"
	receiver "github.com/sluicehq/sluice/promoter-controller/internal/webhook"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// The controller runs as the chart's ServiceAccount, by impersonation, through a whole
// promotion with a credentialed repository, a CommitStatus and a Gate: the chart's RBAC is enough.
func TestPromotionUnderTheChartsServiceAccount(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	charts.InstallForTest(t, env, "promoter-controller", "sluice-system", "promoter-controller")
	sa := env.Impersonate("sluice-system", "promoter-controller")
	saClient, err := kubernetes.NewForConfig(sa)
	require.NoError(t, err)
	for _, a := range []authorizationv1.ResourceAttributes{{Verb: "list", Resource: "secrets"}, {Verb: "watch", Resource: "secrets"}} {
		ok, err := charts.Can(ctx, saClient, a)
		require.NoError(t, err)
		assert.False(t, ok, "the chart must not allow %s secrets", a.Verb)
	}

	f := newFixture(t)
	authed := gittest.NewServer(t, gittest.WithBasicAuth("sluice", "s3cret"))
	f.srv, f.repo = authed, authed.CreateRepo(t, "app")
	_, err = env.Kube.CoreV1().Secrets(f.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data:       map[string][]byte{scmv1alpha1.GitSecretKeyUsername: []byte("sluice"), scmv1alpha1.GitSecretKeyPassword: []byte("s3cret")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = testenv.Update(ctx, env.Sluice.ScmV1alpha1().ScmRepositories(f.ns), "app", func(gr *scmv1alpha1.ScmRepository) {
		gr.Spec.URL = authed.URL("app")
		gr.Spec.Auth = &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "git-creds"}}
	})
	require.NoError(t, err)

	f.bootstrap("dev", "prod")
	f.setGate("freeze", true)
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		s.Environments = []promoterv1alpha1.Environment{{Branch: "dev"}, {Branch: "prod", Gates: &promoterv1alpha1.GateSelector{Refs: []promoterv1alpha1.GateReference{{Name: "freeze"}}}}}
	})
	startPromoter(t, sa, t.TempDir())
	d1 := f.dryCommit("change")
	f.hydrate(d1, "dev", "prod")
	dev := f.waitEnv("dev", "promoted", activeOn(d1))
	f.setStatus("health", dev.Active.HydratedSHA, "success")
	f.waitEnv("prod", "promoted", activeOn(d1))
	require.NoError(t, testenv.Wait(ctx, 20*time.Second, func(context.Context) (bool, error) {
		return len(f.events(promotionstrategy.EventPromotionCompleted)) >= 2, nil
	}), "events recorded under the chart's RBAC")
}

// A signed push delivery re-evaluates the strategy at once, long before its poll; an unsigned
// one is refused.
func TestWebhookTriggersAReconcile(t *testing.T) {
	f := newFixture(t)
	_, err := env.Kube.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data:       map[string][]byte{scmv1alpha1.SecretKeyToken: []byte("t"), scmv1alpha1.SecretKeyWebhookSecret: []byte("hook-secret")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "forge"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: "http://127.0.0.1:1", AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = testenv.Update(f.ctx, env.Sluice.ScmV1alpha1().ScmRepositories(f.ns), "app", func(gr *scmv1alpha1.ScmRepository) {
		gr.Spec.ProviderRef.Name = "forge"
	})
	require.NoError(t, err)

	f.bootstrap("dev")
	// Only the proposal is observed here: the SCM behind this provider is not running.
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		oneEnv(s)
		s.Interval = &metav1.Duration{Duration: time.Hour}
	})
	hooks, addr := webhookConfig(t, t.TempDir())
	m, _ := startPromoterManager(t, env.Config, hooks, nil)
	f.waitEnv("dev", "first reconcile", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.HydratedSHA != "" })

	// The first status write wakes the strategy once more; that reconcile ends before the change
	// lands, so that only the delivery can bring it in.
	f.settle(m)
	d1 := f.dryCommit("change")
	f.hydrateUnannounced(d1, "dev")
	url := fmt.Sprintf("http://%s%s%s/forge", addr, receiver.WebhookPath, f.ns)
	body := []byte(`{"ref":"refs/heads/dev-next","before":"","after":"","repository":{"name":"app","owner":{"login":"acme"}}}`)

	mark := observed(m).mark()
	unsigned, err := http.Post(url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	unsigned.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, unsigned.StatusCode)
	assert.False(t, observed(m).enqueuedSince(mark, "promotionstrategy", f.ns+"/app"), "an unsigned delivery wakes nothing")

	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(gitea.EventHeader, "push")
	req.Header.Set(gitea.SignatureHeader, webhook.SignHMACSHA256([]byte("hook-secret"), body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.True(t, observed(m).enqueuedSince(mark, "promotionstrategy", f.ns+"/app"), "the delivery wakes the strategy before it is answered")
	f.waitEnv("dev", "proposal seen after the webhook", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Proposed.DrySHA == d1 })
}

// A replica that does not lead answers a delivery with 503 and Retry-After within a few seconds,
// well before an SCM gives up on it, instead of leaving the connection hanging.
func TestWebhookOnAStandbyIsAnsweredAtOnce(t *testing.T) {
	f := newFixture(t)
	holder, forever := "another-replica", int32(3600)
	now := metav1.NewMicroTime(time.Now())
	_, err := env.Kube.CoordinationV1().Leases(f.ns).Create(f.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "promoter"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &forever, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	hooks, addr := webhookConfig(t, t.TempDir())
	startPromoterOpts(t, env.Config, hooks, func(o *options.Options) {
		o.LeaderElect = true
		o.LeaderElectionNamespace = f.ns
		o.LeaderElectionID = "promoter"
	})

	url := fmt.Sprintf("http://%s%s%s/forge", addr, receiver.WebhookPath, f.ns)
	client := &http.Client{Timeout: 9 * time.Second}
	resp, err := client.Post(url, "application/json", bytes.NewReader([]byte(`{}`)))
	require.NoError(t, err, "answered before a 9 s client timeout")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Contains(t, string(body), "standby")
}
