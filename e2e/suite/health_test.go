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
	"github.com/sluicehq/sluice/testenv"
)

// healthToGitea: the health-controller pod reads a real Deployment with running pods (the
// gate-controller's, in another namespace) under its chart's RBAC, publishes it as a
// CommitStatus for the revision dev runs, and the commitstatus-controller pod mirrors that to
// the Gitea pod over HTTPS, trusting the cluster CA from the ScmProvider's caBundle.
func (c *Cluster) healthToGitea(t *testing.T, p *promotion) {
	ctx := context.Background()
	dev := p.waitEnvironment(t, "dev", "runs a hydrated commit", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.HydratedSHA != "" })
	sha := dev.Active.HydratedSHA
	checks := c.Sluice.HealthV1alpha1().HealthChecks(p.ns)
	c.healthReader(t, p.ns, "health-reader", release+"-gate-controller")
	_, err := checks.Create(ctx, &healthv1alpha1.HealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "gates-running"},
		Spec: healthv1alpha1.HealthCheckSpec{
			ServiceAccountName: "health-reader",
			Targets: []healthv1alpha1.Target{{Object: &healthv1alpha1.ObjectReference{
				APIVersion: "apps/v1", Kind: "Deployment", Name: release + "-gate-controller", Namespace: system,
			}}},
			CommitStatus: &healthv1alpha1.CommitStatusPublication{
				Key: "health-dev", RepositoryRef: healthv1alpha1.RepositoryReference{Name: "web-deploy"},
				Revision: healthv1alpha1.RevisionSource{Fixed: sha},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.WaitForObject(t, 2*time.Minute, checks, "gates-running", func(h *healthv1alpha1.HealthCheck) bool { return h.Status.Healthy })

	var statuses []struct {
		Context string `json:"context"`
		State   string `json:"status"`
	}
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		err := p.srv.API(ctx, "GET", "/repos/"+p.srv.AdminUser+"/web-deploy/statuses/"+sha, nil, &statuses)
		for _, s := range statuses {
			if s.Context == "health-dev" && s.State == "success" {
				return true, nil
			}
		}
		return false, err
	}, "Gitea shows health-dev=success on %s (statuses: %+v)\n%s", sha[:7], lazy(func() string { return fmt.Sprintf("%+v", statuses) }),
		lazy(func() string {
			return c.controllerLogs("commitstatus-controller") + c.controllerLogs("health-controller")
		}))
}

// healthReader creates ServiceAccount sa in ns, which the HealthCheck reads as, and lets it get
// the one Deployment of the system namespace the check reads: nothing else there.
func (c *Cluster) healthReader(t *testing.T, ns, sa, deployment string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	require.NoError(t, err)
	name := ns + "-" + sa
	_, err = c.Kube.RbacV1().Roles(system).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{deployment}, Verbs: []string{"get"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.RbacV1().RoleBindings(system).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}
