package suite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

// healthKey is the commit-status key of every environment's health.
const healthKey = "health"

// deliveryPipeline sets up Sluice's objects for a: the Gitea provider and repository (its
// webhook delivered to the promoter's Service of release rel in sys), a HealthCheck per
// environment reading its Kustomization's inventory and publishing healthKey for the revision
// the Kustomization applied, a PromotionStrategy web whose environments wait for the health of
// the one before, and a RollbackPolicy of prod on that health. It waits until the strategy sees
// every environment on its first dry commit, and returns the strategy as the suite's promotion
// helpers read it.
func (c *Cluster) deliveryPipeline(t *testing.T, a *webApp, sys, rel string) *promotion {
	t.Helper()
	ctx := context.Background()
	ns := a.ns
	_, err := c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken: []byte(a.srv.Token), scmv1alpha1.SecretKeyWebhookSecret: []byte(webhookSecret),
			scmv1alpha1.GitSecretKeyUsername: []byte(a.srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(a.srv.Token),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	scm := c.Sluice.ScmV1alpha1()
	_, err = scm.ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type: scmv1alpha1.ScmProviderGitea, BaseURL: a.serverURL,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"},
			// The cluster CA that signed Gitea's certificate, as Flux's GitRepositories trust it.
			CABundle: &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "flux-git", Key: "ca.crt"},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = scm.ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: a.name},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: a.cloneURL, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"},
			Owner: a.srv.AdminUser, Name: a.name,
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	c.kustomizationReader(t, ns, "health-reader")
	for _, env := range environments {
		c.environmentHealth(t, a, env)
	}
	var envs []promoterv1alpha1.Environment
	for _, env := range environments {
		envs = append(envs, promoterv1alpha1.Environment{Branch: env})
	}
	_, err = c.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: a.name}, DryBranch: "main",
			ActiveCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: healthKey}},
			// Gitea's webhook and the CommitStatuses wake the promoter; the poll is a fallback.
			Interval: &metav1.Duration{Duration: time.Hour}, Environments: envs,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Sluice.RollbackV1alpha1().RollbackPolicies(ns).Create(ctx, &rollbackv1alpha1.RollbackPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web-prod"},
		Spec: rollbackv1alpha1.RollbackPolicySpec{
			PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "web"},
			Environments:         []string{"prod"},
			Trigger: rollbackv1alpha1.RollbackTriggerSpec{
				CommitStatuses:   []rollbackv1alpha1.CommitStatusKey{{Key: healthKey}},
				FailureThreshold: &metav1.Duration{},
				Window:           &metav1.Duration{Duration: time.Hour},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p := &promotion{c: c, ns: ns, srv: a.srv, repo: a.repo}
	p.addWebhook(t, fmt.Sprintf("http://%s-promoter-controller-webhook.%s.svc/hooks/%s/gitea", rel, sys, ns))
	for _, env := range environments {
		p.waitEnvironment(t, env, "runs the first dry commit, healthy", func(e promoterv1alpha1.EnvironmentStatus) bool {
			return e.Active.DrySHA == a.dry[env] && len(e.LastHealthyDrySHAs) > 0
		})
	}
	return p
}

// environmentHealth is env's HealthCheck web-<env>: the health of what its Kustomization applied,
// read as health-reader, failed when not healthy within healthTimeout, published as healthKey
// for the revision the Kustomization last applied.
func (c *Cluster) environmentHealth(t *testing.T, a *webApp, env string) {
	t.Helper()
	kustomization := &healthv1alpha1.SourceReference{Name: "web-" + env}
	_, err := c.Sluice.HealthV1alpha1().HealthChecks(a.ns).Create(context.Background(), &healthv1alpha1.HealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + env},
		Spec: healthv1alpha1.HealthCheckSpec{
			ServiceAccountName: "health-reader",
			Targets:            []healthv1alpha1.Target{{Kustomization: kustomization}},
			Timeout:            &metav1.Duration{Duration: healthTimeout},
			CommitStatus: &healthv1alpha1.CommitStatusPublication{
				Key: healthKey, Name: healthKey + "-" + env,
				RepositoryRef: healthv1alpha1.RepositoryReference{Name: a.name},
				Revision:      healthv1alpha1.RevisionSource{Kustomization: kustomization},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// kustomizationReader creates ServiceAccount sa in ns, which the HealthChecks read as: it may
// read the namespace's Kustomizations and Deployments, nothing else.
func (c *Cluster) kustomizationReader(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	require.NoError(t, err)
	read := []string{"get", "list", "watch"}
	_, err = c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: read},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}
