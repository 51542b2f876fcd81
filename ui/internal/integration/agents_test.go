package integration

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestTheEnvironmentCardShowsTheKustomizationThatDeploysIt: real source-controller and
// kustomize-controller deploy env/dev of the strategy's repository through a GitRepository that
// follows that branch. The card of env/dev shows the Kustomization Ready with the revision it
// applied; one of another branch is not on it. When its gate closes, the real gate-controller
// holds it, and the open page says so without a reload.
func TestTheEnvironmentCardShowsTheKustomizationThatDeploysIt(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	gateController(t)
	ns := newNamespace(t)
	ctx := context.Background()

	repo, repoURL := gittest.NewGitServedRepo(t, "deploy")
	sha := repo.CommitFiles(t, "env/dev", map[string]string{"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  image: web:1\n"}, "web 1")
	repo.CommitFiles(t, "env/prod", map[string]string{"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-prod\n"}, "prod")
	createScmRepository(t, ns, repoURL)
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: oldSHA, HydratedSHA: sha}})
	createGate(t, ns, "freeze")

	flux.Start(t, env, flux.Options{Namespace: ns})
	flux.CreateGitRepository(t, env, ns, "deploy-dev", flux.GitRepositorySpec{URL: repoURL, Branch: "env/dev", Interval: time.Minute})
	flux.CreateGitRepository(t, env, ns, "deploy-prod", flux.GitRepositorySpec{URL: repoURL, Branch: "env/prod", Interval: time.Minute})
	flux.CreateKustomization(t, env, ns, "apps", flux.KustomizationSpec{GitRepository: "deploy-dev", TargetNamespace: ns, Interval: time.Minute,
		Annotations: map[string]string{gate.GatesAnnotation: "freeze"}})
	flux.CreateKustomization(t, env, ns, "apps-prod", flux.KustomizationSpec{GitRepository: "deploy-prod", TargetNamespace: ns, Interval: time.Minute})
	flux.WaitForApplied(t, env, ns, "apps", flux.Revision("env/dev", sha))

	b := browser(t)
	signIn(b, t, url)
	card := `//li[@id="env-env-dev"]//li[@data-agent="Kustomization/` + ns + `/apps"]`
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(chromedp.Search(card+`[contains(., "Ready")][contains(., "`+flux.Revision("env/dev", sha)+`")]`)))
	agents := read(b, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#env-env-dev [data-agent]')].map(a => a.dataset.agent)`))
	assert.Equal(t, []string{"Kustomization/" + ns + "/apps"}, agents, "the Kustomization of env/prod deploys another environment")
	assert.NotContains(t, read(b, t, chromedp.Text(chromedp.Search(card))), "held by a gate")

	g, err := env.Sluice.GatingV1alpha1().Gates(ns).Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	g.Spec.Closed, g.Spec.Message = true, "audit"
	_, err = env.Sluice.GatingV1alpha1().Gates(ns).Update(ctx, g, metav1.UpdateOptions{})
	require.NoError(t, err)
	step, cancel := context.WithTimeout(b, 2*time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(step, chromedp.WaitVisible(chromedp.Search(card+`[contains(., "held by a gate")]`))),
		"the card shows the gate-controller's hold, live")
	assert.Contains(t, read(b, t, chromedp.Text(chromedp.Search(card))), "gate "+ns+"/freeze")
	screenshot(b, t, "agents")
}
