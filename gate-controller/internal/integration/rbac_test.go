package integration

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/internal/kinds"
	"github.com/sluicehq/sluice/gate-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/argocd"
	"github.com/sluicehq/sluice/testenv/charts"
	"github.com/sluicehq/sluice/testenv/flux"
)

// The chart's RBAC is enough for the controller, with the flags the chart renders: the
// controller runs as the chart's ServiceAccount, under leader election, and holds and releases
// Flux objects and Argo CD Applications.
func TestTheControllerWorksUnderTheChartsRBAC(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ctx := context.Background()
	const release, system = "gate-controller", "sluice-system"
	helm := charts.InstallForTest(t, env, release, system, "gate-controller")

	manifest, err := helm.Run(ctx, "get", "manifest", release, "--namespace", system)
	require.NoError(t, err)
	flag := regexp.MustCompile(`--targets=([^"\s]+)`).FindStringSubmatch(manifest)
	require.Len(t, flag, 2, "the chart passes --targets")
	targets, err := kinds.ParseTargets(flag[1])
	require.NoError(t, err)
	assert.Equal(t, kinds.Defaults(), targets, "the chart's default targets are the controller's")

	shard := map[string]string{shardLabel: "rbac"}
	stop := startController(t, "gate-controller", env.Impersonate(system, release), setup.Config{Targets: targets}, func(o *options.Options) {
		o.WatchLabelSelector = shardLabel + "=rbac"
		o.LeaderElect = true
		o.LeaderElectionNamespace = system
	})

	ns := newNamespace(t)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{Closed: true}, shard)
	refs := map[string]string{gate.GatesAnnotation: "prod"}
	ks := createFlux(t, flux.Kustomizations, ns, "apps", refs, nil, "kubectl-create", shard)
	repo := createFlux(t, flux.GitRepositories, ns, "repo", refs, nil, "kubectl-create", shard)
	app, appBefore := createApplication(t, applicationManifest(ns, "shop", refs, gitSyncPolicy(), shard))
	for _, o := range []object{ks, repo} {
		waitObject(t, o, wait, "held under the chart's RBAC", heldByController)
	}
	waitObject(t, app, wait, "held under the chart's RBAC", applicationHeld)
	waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 3 })
	waitEvent(t, ns, "prod", "Holding")
	updateGate(t, ns, "prod", func(g *gatingv1alpha1.Gate) { g.Spec.Closed = false })
	for _, o := range []object{ks, repo} {
		waitObject(t, o, wait, "released under the chart's RBAC", released)
	}
	assertRestored(t, app, appBefore)
	// Holding an Application needs patch on it and no right on AppProjects: the chart grants none.
	for gvr, allowed := range map[schema.GroupVersionResource]bool{argocd.Applications: true, argocd.AppProjects: false} {
		review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, accessReview(system, release, "patch", gvr), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, allowed, review.Status.Allowed, "patch %s", gvr.Resource)
	}
	lease, err := env.Kube.CoordinationV1().Leases(system).Get(ctx, "gate-controller-leader", metav1.GetOptions{})
	require.NoError(t, err, "the controller holds its Lease in its own namespace")
	assert.NotEmpty(t, lease.Spec.HolderIdentity)

	stop() // fails the test unless the controller stops cleanly
}

// accessReview asks whether the chart's ServiceAccount may do verb on gvr in Argo CD's namespace.
func accessReview(namespace, serviceAccount, verb string, gvr schema.GroupVersionResource) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: gvr.Group, Resource: gvr.Resource, Namespace: "argocd",
		},
	}}
}
