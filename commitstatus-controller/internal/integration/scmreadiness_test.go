package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/scmrepository"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// The controller fills the Ready condition of ScmProviders and ScmRepositories, under the chart's
// ServiceAccount. With secretAccess.watch, creating a missing Secret is enough to make them Ready
// at once: the recheck interval is an hour, so only the Secret event can. With get only (the
// chart's default, no watch) the periodic recheck notices it instead. The SCM is never called.
func TestScmProvidersAndScmRepositoriesReportReadiness(t *testing.T) {
	testenv.SkipIfShort(t)
	for _, tc := range []struct {
		name    string
		release string
		set     []string
		recheck time.Duration
	}{
		{name: "Secrets watched", release: "commitstatus-controller-watch", set: []string{"secretAccess.watch=true"}, recheck: time.Hour},
		{name: "get only, rechecked", release: "commitstatus-controller-get", recheck: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const releaseNS = "sluice-scm-status"
			installChart(t, tc.release, releaseNS, tc.set...)
			startController(t, controllerOptions{
				config: env.Impersonate(releaseNS, tc.release),
				setup:  func(c *setup.Config) { c.RecheckInterval = tc.recheck },
			})
			readinessScenario(t)
		})
	}
}

func readinessScenario(t *testing.T) {
	ctx := context.Background()
	srv := scmtest.NewGitHub(t, githubToken)
	ns := newNamespace(t)
	createSecret(t, ns, "github-ca", map[string]string{"ca.crt": string(srv.CAPEM)})
	createProvider(t, ns, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "github"},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type: scmv1alpha1.ScmProviderGitHub, BaseURL: srv.URL,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "github-token"},
			CABundle:  &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "github-ca"},
		},
	})
	createRepository(t, ns, "app", "github", "acme", "app", "https://github.example.com/acme/app.git")

	missing := waitProvider(t, ns, "github", readyIs(metav1.ConditionFalse, resolve.ReasonSecretNotFound))
	assert.True(t, conditions.IsTrue(missing.Status.Conditions, conditions.Stalled))
	assert.Contains(t, conditions.Get(missing.Status.Conditions, conditions.Ready).Message,
		`Secret "github-token", named by ScmProvider "github", does not exist in namespace "`+ns+`"`)
	assert.Equal(t, missing.Generation, missing.Status.ObservedGeneration)
	waitRepository(t, ns, "app", readyIs(metav1.ConditionFalse, scmrepository.ReasonProviderNotReady))

	// Nothing but the Secret changes.
	createSecret(t, ns, "github-token", map[string]string{"token": githubToken})
	ready := waitProvider(t, ns, "github", readyIs(metav1.ConditionTrue, readiness.ReasonValid))
	assert.Equal(t, missing.Generation, ready.Generation)
	assert.Empty(t, ready.Annotations, "no touch was needed")
	assert.Nil(t, conditions.Get(ready.Status.Conditions, conditions.Stalled))
	waitRepository(t, ns, "app", readyIs(metav1.ConditionTrue, readiness.ReasonValid))

	createRepository(t, ns, "orphan", "gitlab", "acme", "app", "https://gitlab.example.com/acme/app.git")
	orphan := waitRepository(t, ns, "orphan", readyIs(metav1.ConditionFalse, resolve.ReasonProviderNotFound))
	assert.Contains(t, conditions.Get(orphan.Status.Conditions, conditions.Ready).Message,
		`ScmProvider "gitlab" does not exist in namespace "`+ns+`": create it, or fix spec.providerRef.name`)

	// A repository whose git credentials are missing, then created.
	_, err := env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: "ssh://git@github.example.com/acme/private.git", ProviderRef: scmv1alpha1.LocalObjectReference{Name: "github"},
			Owner: "acme", Name: "private",
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthSSH, SecretRef: scmv1alpha1.LocalObjectReference{Name: "deploy-key"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	private := waitRepository(t, ns, "private", readyIs(metav1.ConditionFalse, resolve.ReasonSecretNotFound))
	assert.Contains(t, conditions.Get(private.Status.Conditions, conditions.Ready).Message, "identity and known_hosts")
	createSecret(t, ns, "deploy-key", map[string]string{"identity": "-----BEGIN OPENSSH PRIVATE KEY-----\n", "known_hosts": "github.example.com ssh-ed25519 AAAA"})
	waitRepository(t, ns, "private", readyIs(metav1.ConditionTrue, readiness.ReasonValid))

	assert.Empty(t, srv.Requests(), "checking an ScmProvider spends none of the SCM's quota")
}

func installChart(t *testing.T, release, namespace string, set ...string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	helm, err := charts.NewHelm(env)
	require.NoError(t, err)
	t.Cleanup(func() { _ = helm.Close() })
	// The test environment installed the CRDs: the chart must not own them too. The tests'
	// namespaces are made after the chart, so Secrets are readable in every namespace here (the
	// chart's default, none, and secretAccess.namespaces are TestTheChartRBACIsEnoughAndLimitsSecretAccess's).
	set = append(set, "crds.enabled=false", "secretAccess.clusterWide=true")
	require.NoError(t, helm.Install(context.Background(), release, namespace, filepath.Join(root, "charts", "commitstatus-controller"), set...))
	t.Cleanup(func() { _ = helm.Uninstall(context.Background(), release, namespace) })
}

// readyIs is true once Ready has status and reason at the object's current generation.
func readyIs(status metav1.ConditionStatus, reason string) func(generation int64, conds []metav1.Condition) bool {
	return func(generation int64, conds []metav1.Condition) bool {
		r := conditions.Get(conds, conditions.Ready)
		return r != nil && r.Status == status && r.Reason == reason && r.ObservedGeneration == generation
	}
}

func waitProvider(t testing.TB, ns, name string, cond func(int64, []metav1.Condition) bool) *scmv1alpha1.ScmProvider {
	t.Helper()
	return testenv.WaitForObject(t, 30*time.Second, env.Sluice.ScmV1alpha1().ScmProviders(ns), name,
		func(p *scmv1alpha1.ScmProvider) bool { return cond(p.Generation, p.Status.Conditions) })
}

func waitRepository(t testing.TB, ns, name string, cond func(int64, []metav1.Condition) bool) *scmv1alpha1.ScmRepository {
	t.Helper()
	return testenv.WaitForObject(t, 30*time.Second, env.Sluice.ScmV1alpha1().ScmRepositories(ns), name,
		func(r *scmv1alpha1.ScmRepository) bool { return cond(r.Generation, r.Status.Conditions) })
}

// A CommitStatus stalled on its provider's missing Secret is sent as soon as the provider turns
// Ready, not at its next recheck (an hour here).
func TestACommitStatusWaitingForItsProviderIsSentWhenItTurnsReady(t *testing.T) {
	testenv.SkipIfShort(t)
	const releaseNS, release = "sluice-scm-status", "commitstatus-controller-waiting"
	installChart(t, release, releaseNS, "secretAccess.watch=true")
	startController(t, controllerOptions{
		config: env.Impersonate(releaseNS, release),
		setup:  func(c *setup.Config) { c.RecheckInterval = time.Hour },
	})
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	ns := newNamespace(t)
	createSecret(t, ns, "github-ca", map[string]string{"ca.crt": string(srv.CAPEM)})
	createProvider(t, ns, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "github"},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type: scmv1alpha1.ScmProviderGitHub, BaseURL: srv.URL,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "github-token"},
			CABundle:  &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "github-ca"},
		},
	})
	createRepository(t, ns, "app", "github", "acme", "app", "https://github.example.com/acme/app.git")
	const sha = "0123456789abcdef0123456789abcdef01234567"
	createCommitStatus(t, newCommitStatus(ns, "health", "app", sha, commitstatusv1alpha1.CommitStatusSuccess))
	waitFor(t, ns, "health", stalled(resolve.ReasonSecretNotFound))

	createSecret(t, ns, "github-token", map[string]string{"token": githubToken})
	waitFor(t, ns, "health", synced(commitstatusv1alpha1.CommitStatusSuccess))
	assert.Len(t, srv.Statuses("acme", "app", sha), 1)
}
