package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// realFluxManifests is what the repository deploys: a ConfigMap judged by a CEL check of the
// HealthCheck, and a Service judged by kstatus.
func realFluxManifests(mode string) map[string]string {
	return map[string]string{
		"flags.yaml":   fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\ndata:\n  mode: %s\n", mode),
		"service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
	}
}

// The health of what real kustomize-controller applied: the HealthCheck reads the inventory
// kustomize-controller wrote (no test writes it), judges the ConfigMap by its CEL check and the
// Service by kstatus, and publishes the verdict as a CommitStatus for the commit Flux applied. A
// commit whose ConfigMap the check calls failed turns it into a failure for that commit.
func TestHealthOfARealKustomizationBecomesACommitStatus(t *testing.T) {
	testenv.SkipIfShort(t)
	t.Parallel()
	ns := newNamespace(t)
	startController(t, ns, nil, nil)
	repo, url := gittest.NewGitServedRepo(t, "app")
	healthy := repo.CommitFiles(t, "main", realFluxManifests("healthy"), "healthy")
	flux.Start(t, env, flux.Options{Namespace: ns})
	flux.CreateGitRepository(t, env, ns, "app", flux.GitRepositorySpec{URL: url, Branch: "main", Interval: 2 * time.Second})
	flux.CreateKustomization(t, env, ns, "apps", flux.KustomizationSpec{GitRepository: "app", TargetNamespace: ns, Interval: 2 * time.Second})
	flux.WaitForApplied(t, env, ns, "apps", flux.Revision("main", healthy))
	createHC(t, ns, webOfTheAppsKustomization)

	cs := waitCommitStatus(t, ns, "web", phaseFor(healthy, commitstatusv1alpha1.CommitStatusSuccess))
	assert.Equal(t, "Healthy: 2/2 Current", cs.Spec.Description)
	hc := waitHC(t, ns, "web", ready)
	assert.Equal(t, flux.Revision("main", healthy), hc.Status.ObservedRevision)
	for kind, name := range map[string]string{"ConfigMap": "flags", "Service": "web"} {
		r, ok := resource(hc, kind, name)
		if assert.True(t, ok, "%s %s from kustomize-controller's inventory", kind, name) {
			assert.Equal(t, healthv1alpha1.StatusCurrent, r.Status, "%s %s", kind, name)
		}
	}

	broken := repo.CommitFiles(t, "main", realFluxManifests("broken"), "broken")
	flux.WaitForApplied(t, env, ns, "apps", flux.Revision("main", broken))
	cs = waitCommitStatus(t, ns, "web", phaseFor(broken, commitstatusv1alpha1.CommitStatusFailure))
	assert.Contains(t, cs.Spec.Description, "1 Failed")
	hc = waitHC(t, ns, "web", func(hc *healthv1alpha1.HealthCheck) bool { return readyReason(hc) == healthv1alpha1.ReasonFailed })
	assert.Equal(t, flux.Revision("main", healthy), hc.Status.LastHealthyRevision)
}

// webOfTheAppsKustomization is the HealthCheck of what Kustomization apps applied: its
// ConfigMaps' mode, published as health-web for the revision apps last applied.
const webOfTheAppsKustomization = `
metadata: {name: web}
spec:
  targets:
  - kustomization: {name: apps}
  healthCheckExprs:
  - apiVersion: v1
    kind: ConfigMap
    current: "self.data.mode == 'healthy'"
    failed: "self.data.mode == 'broken'"
  timeout: 10m
  commitStatus:
    key: health-web
    repositoryRef: {name: app}
    revision:
      kustomization: {name: apps}`
