package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// The recommended fleet layout (docs/architecture.md, "Fleets"), on two control planes and a
// real Gitea. Cluster A (management) runs the promoter and this controller, which imports the
// SCM's statuses; cluster B (workload, running staging) runs the health-controller and this
// controller, which mirrors B's health to Gitea. Neither holds the other's kubeconfig: the SCM
// is the only thing they share.
//
// Staging's health fails in B: A's promotion to prod is blocked with B's message. It recovers:
// A promotes prod.
func TestFleetPromotionWaitsForAnotherClustersHealthThroughGitea(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	installAllCRDs(t)
	a := cluster{name: "A", env: env}
	b := startSecondCluster(t)
	promoter, health := buildController(t, "promoter-controller"), buildController(t, "health-controller")
	srv := giteatest.StartForTest(t)
	cloneURL, repo, d0 := giteaApp(t, srv)
	hydrate(t, repo, "", "staging", d0)
	hydrate(t, repo, "", "prod", d0)

	ns := newNamespace(t)
	giteaOn(t, a, ns, srv, cloneURL)
	giteaOn(t, b, ns, srv, cloneURL)

	// Cluster A: the strategy, the promoter, and the import woken by Gitea's status webhook.
	createStagingGatesProd(ctx, t, a, ns)
	importer, addr := importerWithWebhook(t, 10*time.Minute)
	startController(t, controllerOptions{setup: importer})
	runController(t, promoter, a.env.Kubeconfig, "--git-cache-dir", t.TempDir())
	statusHook(t, srv, addr, ns)

	// Cluster B: its own commitstatus-controller and health-controller, and staging's workload.
	startController(t, controllerOptions{config: b.env.Config})
	runController(t, health, b.env.Kubeconfig)
	createWebDeployment(t, b.env.Kube, ns)
	letDefaultServiceAccountReadDeployments(t, b.env.Kube, ns)

	// A new dry commit is proposed to both; staging has no checks of its own and is promoted.
	_ = repo.Fetch(ctx, "main")
	d1 := commitDry(t, repo, "v: 1\n")
	hydrate(t, repo, "staging", "staging-next", d1)
	hydrate(t, repo, "prod", "prod-next", d1)
	ps := waitStrategy(t, ns, "staging promoted to d1", func(ps *promoterv1alpha1.PromotionStrategy) bool {
		return strategyEnv(ps, "staging").Active.DrySHA == d1
	})
	stagingSHA := strategyEnv(ps, "staging").Active.HydratedSHA

	// B reports staging's health on the commit it runs: the rollout failed.
	progressFailed(t, b.env.Kube, ns)
	checkStagingHealth(ctx, t, b, ns, stagingSHA)

	blocked := waitStrategy(t, ns, "prod blocked with cluster B's message", func(ps *promoterv1alpha1.PromotionStrategy) bool {
		return strings.Contains(strategyEnv(ps, "prod").Blocked, "health-staging on staging is failure: Failed")
	})
	prod := strategyEnv(blocked, "prod")
	assert.Equal(t, d0, prod.Active.DrySHA, "prod is not promoted while staging fails in B")
	imported := importedStatus(t, ns, stagingSHA, "health-staging")
	assert.Equal(t, "health-staging", imported.Labels[commitstatusv1alpha1.KeyLabel])
	assert.Equal(t, commitstatusv1alpha1.CommitStatusFailure, imported.Spec.Phase)
	assert.Equal(t, "PromotionStrategy", imported.OwnerReferences[0].Kind)
	assert.Empty(t, imported.Status.Conditions, "never mirrored back to Gitea")

	// B recovers: prod is promoted. A's processes were given A's kubeconfig only, B's B's.
	recovered := time.Now()
	rolledOutWeb(t, b.env.Kube, ns)
	waitStrategy(t, ns, "prod promoted to d1", func(ps *promoterv1alpha1.PromotionStrategy) bool {
		return strategyEnv(ps, "prod").Active.DrySHA == d1
	})
	t.Logf("from cluster B's recovery to cluster A's promotion of prod: %s", time.Since(recovered).Round(10*time.Millisecond))
}

// createStagingGatesProd creates, in cluster c, a strategy whose prod waits for the health of
// staging, which runs in another cluster and reports it as health-staging.
func createStagingGatesProd(ctx context.Context, t *testing.T, c cluster, ns string) {
	t.Helper()
	_, err := c.env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: promoterv1alpha1.PromotionStrategySpec{
			RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main",
			Interval: &metav1.Duration{Duration: 5 * time.Second},
			Environments: []promoterv1alpha1.Environment{
				// Staging runs in cluster B; its health there gates prod.
				{Branch: "staging", ActiveCommitStatuses: []promoterv1alpha1.CommitStatusSelector{{Key: "health-staging"}}},
				{Branch: "prod"},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// checkStagingHealth creates, in cluster c, the HealthCheck of staging's Deployment, which
// publishes health-staging on stagingSHA.
func checkStagingHealth(ctx context.Context, t *testing.T, c cluster, ns, stagingSHA string) {
	t.Helper()
	_, err := c.env.Sluice.HealthV1alpha1().HealthChecks(ns).Create(ctx, &healthv1alpha1.HealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "staging"},
		Spec: healthv1alpha1.HealthCheckSpec{
			Targets: []healthv1alpha1.Target{{Object: &healthv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}},
			CommitStatus: &healthv1alpha1.CommitStatusPublication{
				Key: "health-staging", RepositoryRef: healthv1alpha1.RepositoryReference{Name: "app"},
				Revision: healthv1alpha1.RevisionSource{Fixed: stagingSHA},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

}

func commitDry(t *testing.T, repo *git.Repository, values string) string {
	t.Helper()
	sha, err := repo.CommitFiles(context.Background(), git.CommitRequest{Branch: "main", Files: map[string][]byte{"values.yaml": []byte(values)}, Message: "values " + values})
	require.NoError(t, err)
	return sha
}

// deploymentStatus writes a Deployment's status subresource through testenv.Update.
type deploymentStatus struct {
	client typedappsv1.DeploymentInterface
}

func (d deploymentStatus) Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.Deployment, error) {
	return d.client.Get(ctx, name, opts)
}

func (d deploymentStatus) Update(ctx context.Context, obj *appsv1.Deployment, opts metav1.UpdateOptions) (*appsv1.Deployment, error) {
	return d.client.UpdateStatus(ctx, obj, opts)
}

func waitStrategy(t *testing.T, ns, what string, cond func(*promoterv1alpha1.PromotionStrategy) bool) *promoterv1alpha1.PromotionStrategy {
	t.Helper()
	var last *promoterv1alpha1.PromotionStrategy
	err := testenv.Wait(context.Background(), 2*time.Minute, func(ctx context.Context) (bool, error) {
		ps, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = ps
		return cond(ps), nil
	})
	if err != nil && last != nil {
		for _, e := range last.Status.Environments {
			t.Logf("%s: active %s proposed %s blocked %q", e.Branch, e.Active.DrySHA, e.Proposed.DrySHA, e.Blocked)
		}
	}
	require.NoError(t, err, what)
	return last
}

// importedStatus returns the imported CommitStatus of name on sha.
func importedStatus(t *testing.T, ns, sha, name string) *commitstatusv1alpha1.CommitStatus {
	t.Helper()
	list, err := env.Sluice.CommitstatusV1alpha1().CommitStatuses(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: commitstatusv1alpha1.ImportedLabel + "=true",
	})
	require.NoError(t, err)
	for i := range list.Items {
		if cs := &list.Items[i]; cs.Spec.SHA == sha && cs.Spec.Name == name {
			return cs
		}
	}
	require.Failf(t, "no imported CommitStatus", "%s on %s among %d imported", name, sha, len(list.Items))
	return nil
}

func createWebDeployment(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	replicas := int32(2)
	selector := map[string]string{"app": "web"}
	_, err := kube.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "ghcr.io/example/web:1.0.0"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// webStatus writes the Deployment's status as the deployment controller would.
func webStatus(t *testing.T, kube kubernetes.Interface, ns string, progressing appsv1.DeploymentCondition, unavailable int32) {
	t.Helper()
	_, err := testenv.Update(context.Background(), deploymentStatus{kube.AppsV1().Deployments(ns)}, "web", func(d *appsv1.Deployment) {
		n := *d.Spec.Replicas
		d.Status.ObservedGeneration = d.Generation
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n-unavailable, n-unavailable, n-unavailable
		d.Status.UnavailableReplicas = unavailable
		d.Status.Conditions = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			progressing,
		}
	})
	require.NoError(t, err)
}

func progressFailed(t *testing.T, kube kubernetes.Interface, ns string) {
	webStatus(t, kube, ns, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-7d4b9c" has timed out progressing.`}, 1)
}

func rolledOutWeb(t *testing.T, kube kubernetes.Interface, ns string) {
	webStatus(t, kube, ns, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
		Reason: "NewReplicaSetAvailable"}, 0)
}

// letDefaultServiceAccountReadDeployments grants what a HealthCheck that names no ServiceAccount
// reads with: the namespace's default ServiceAccount, as the health-controller's
// --default-service-account has it.
func letDefaultServiceAccountReadDeployments(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "health-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "health-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "health-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}
