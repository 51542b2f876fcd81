package integration

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/commitstatus"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
)

const (
	githubToken = "ghp_integration_token_0123456789"
	sha1        = "1111111111111111111111111111111111111111"
	sha2        = "2222222222222222222222222222222222222222"
)

// githubSetup creates, in a new namespace, an ScmProvider of type github for srv (trusting its
// certificate through a ConfigMap CA bundle) and a ScmRepository acme/app named "app".
func githubSetup(t testing.TB, srv *scmtest.GitHub, mutate func(*scmv1alpha1.ScmProvider)) string {
	t.Helper()
	ns := newNamespace(t)
	createSecret(t, ns, "github-token", map[string]string{"token": githubToken})
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github-ca"},
		Data:       map[string]string{"ca.crt": string(srv.CAPEM)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "github"},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type: scmv1alpha1.ScmProviderGitHub, BaseURL: srv.URL,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "github-token"},
			CABundle:  &scmv1alpha1.CABundleReference{Kind: "ConfigMap", Name: "github-ca"},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	createProvider(t, ns, p)
	createRepository(t, ns, "app", "github", "acme", "app", "https://github.example.com/acme/app.git")
	return ns
}

// metric returns the value of the first series of name whose labels include want.
func metric(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			return value(m), true
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

func outcomes(t testing.TB, r *running, outcome string) float64 {
	v, _ := metric(t, r.m.Metrics, "sluice_commitstatus_reconcile_outcomes_total", map[string]string{"outcome": outcome})
	return v
}

// waitOutcome waits until the controller counted at least n reconciles with outcome.
func waitOutcome(t testing.TB, r *running, outcome string, n float64) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, func() (bool, error) { return outcomes(t, r, outcome) >= n, nil },
		"waiting for %v reconciles with outcome %s", n, outcome)
}

// The digest in status keeps the controller from sending the same state twice: not on repeated
// events, not on changes of referenced objects, not after a restart.
func TestTheSameStateIsSentOnlyOnce(t *testing.T) {
	testenv.SkipIfShort(t)
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	srv.SetQuota(1000, time.Hour)
	ns := githubSetup(t, srv, nil)
	first := startController(t, controllerOptions{})
	ctx := context.Background()

	createCommitStatus(t, newCommitStatus(ns, "health", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess))
	cs := waitFor(t, ns, "health", synced(commitstatusv1alpha1.CommitStatusSuccess))
	require.Equal(t, int64(1), srv.StatusPosts())
	assert.Equal(t, "1", cs.Status.ProviderID)
	got := srv.Statuses("acme", "app", sha1)
	require.Len(t, got, 1)
	assert.Equal(t, scmtest.GitHubStatus{ID: 1, State: "success", Context: "sluice/health",
		Description: "healthy in staging", TargetURL: "https://dash.example.com/staging"}, got[0])

	// Events on the object, its repository and its provider bring it back; none sends again.
	// Each touch waits for its reconcile: touches that land while the key is still queued would
	// be one reconcile, as the workqueue merges them.
	before := outcomes(t, first, commitstatus.OutcomeUnchanged)
	updateCommitStatus(t, ns, "health", func(cs *commitstatusv1alpha1.CommitStatus) { cs.Labels["touched"] = "1" })
	waitOutcome(t, first, commitstatus.OutcomeUnchanged, before+1)
	_, err := testenv.Update(ctx, env.Sluice.ScmV1alpha1().ScmRepositories(ns), "app", func(repo *scmv1alpha1.ScmRepository) {
		metav1.SetMetaDataAnnotation(&repo.ObjectMeta, "touched", "1")
	})
	require.NoError(t, err)
	waitOutcome(t, first, commitstatus.OutcomeUnchanged, before+2)
	_, err = testenv.Update(ctx, env.Sluice.ScmV1alpha1().ScmProviders(ns), "github", func(provider *scmv1alpha1.ScmProvider) {
		metav1.SetMetaDataAnnotation(&provider.ObjectMeta, "touched", "1")
	})
	require.NoError(t, err)
	waitOutcome(t, first, commitstatus.OutcomeUnchanged, before+3)
	assert.Equal(t, int64(1), srv.StatusPosts(), "three reconciles, no call")

	// A restarted controller has only the status to go by.
	first.stop()
	second := startController(t, controllerOptions{})
	waitOutcome(t, second, commitstatus.OutcomeUnchanged, 1)
	assert.Equal(t, int64(1), srv.StatusPosts(), "no call after a restart")

	updateCommitStatus(t, ns, "health", func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Phase = commitstatusv1alpha1.CommitStatusFailure })
	waitFor(t, ns, "health", synced(commitstatusv1alpha1.CommitStatusFailure))
	assert.Equal(t, int64(2), srv.StatusPosts(), "a new phase is one call")
	got = srv.Statuses("acme", "app", sha1)
	assert.Equal(t, "failure", got[len(got)-1].State)

	// The SCM metrics of the restarted controller: its one call, the quota GitHub reported.
	key := ns + "/github"
	calls, ok := metric(t, second.m.Metrics, "sluice_scm_calls_total", map[string]string{
		"provider": key, "type": "github", "operation": "set_commit_status", "result": "success"})
	require.True(t, ok)
	assert.Equal(t, 1.0, calls)
	remaining, ok := metric(t, second.m.Metrics, "sluice_scm_ratelimit_remaining", map[string]string{"provider": key})
	require.True(t, ok)
	assert.Equal(t, float64(1000-srv.StatusPosts()), remaining)
	_, ok = metric(t, second.m.Metrics, "workqueue_adds_total", map[string]string{"name": "commitstatuses"})
	assert.True(t, ok, "workqueue metrics come from the runtime")

	events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=health"})
	require.NoError(t, err)
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason)
	}
	assert.Contains(t, reasons, commitstatus.ReasonSynced)
}

// A spent quota pauses every call until the reset, instead of sending requests GitHub refuses.
func TestASpentQuotaRequeuesUntilTheReset(t *testing.T) {
	testenv.SkipIfShort(t)
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	srv.SetQuota(1, 2*time.Second)
	ns := githubSetup(t, srv, nil)
	// Pauses longer than the max wait give the worker back and requeue the object for the reset
	// time. One worker, so that no request is in flight when the quota runs out.
	startController(t, controllerOptions{
		mutate: func(o *options.Options) { o.Workers = 1 },
		setup:  func(c *setup.Config) { c.RateLimitMaxWait = 100 * time.Millisecond },
	})

	names := []string{"a", "b", "c"}
	for _, name := range names {
		createCommitStatus(t, newCommitStatus(ns, name, "app", sha2, commitstatusv1alpha1.CommitStatusSuccess))
	}
	// At most one of them fits in the first window; the others wait for the reset.
	sawRateLimited := false
	require.NoError(t, testenv.Wait(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		done := 0
		for _, name := range names {
			cs, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if r := conditions.Get(cs.Status.Conditions, conditions.Ready); r != nil && r.Reason == commitstatus.ReasonRateLimited {
				sawRateLimited = true
			}
			if synced(commitstatusv1alpha1.CommitStatusSuccess)(cs) {
				done++
			}
		}
		return done == len(names), nil
	}))
	assert.True(t, sawRateLimited, "waiting objects say they are rate limited")
	assert.Equal(t, int64(len(names)), srv.StatusPosts()-srv.Throttled(), "each status was accepted once")
	assert.Zero(t, srv.Throttled(), "the remaining-quota header pauses calls before GitHub has to refuse them")
}
