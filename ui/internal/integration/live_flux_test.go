package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestAGatePageRefreshesOnlyForTheObjectsThatNameItsGate: an open gate page is not fetched again
// when kustomize-controller's kind of write (status) lands on a Kustomization that names another
// gate, and is when one that names its gate changes; one that stops naming the gate leaves the
// page live. A second stream in the same browser, following the other Kustomization, tells the
// test that its write was pushed before the next one is made.
func TestAGatePageRefreshesOnlyForTheObjectsThatNameItsGate(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	createGate(t, ns, "freeze")
	createGate(t, ns, "other")
	createKustomization(t, ns, "apps", "freeze")
	createKustomization(t, ns, "unrelated", "other")

	b := browser(t)
	signIn(b, t, url)
	row := `//table[@id="targets"]//tr[td[contains(., "` + ns + `/apps")]]`
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)), chromedp.WaitVisible(chromedp.Search(row)))
	watch := strings.Split(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-watch')`)), ",")
	assert.Contains(t, watch, "GateTargets/"+ns+"/freeze", "the page names the objects of its gate")
	assert.NotContains(t, watch, "Kustomization", "and not every Kustomization")
	followOtherStream(b, t, "Kustomization/"+ns+"/unrelated")
	before := updates(b, t)

	fluxStatusWrite(t, ns, "unrelated", "main@sha1:"+strings.Repeat("1", 40))
	read(b, t, chromedp.Poll[bool](`seen >= 1`))
	suspendKustomization(t, ns, "apps", "paused for the audit")
	within(b, t, chromedp.WaitVisible(chromedp.Search(row+`[contains(., "paused for the audit")]`)))
	assert.Equal(t, before+1, updates(b, t), "one refresh, for the Kustomization that names the gate; none for the other")

	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Patch(context.Background(), "apps", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"gating.sluice.dev/gates":"other"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	read(b, t, chromedp.Poll[bool](`!document.getElementById('targets') || !document.getElementById('targets').textContent.includes('`+ns+`/apps')`))
	assert.Equal(t, before+2, updates(b, t), "the Kustomization that stopped naming the gate refreshed its page once")
}

// TestAPipelinePageRefreshesOnlyForTheAgentsOfItsBranches: an open pipeline page is not fetched
// again when a status write lands on a Kustomization that deploys another branch of the
// repository, and is when the Kustomization that deploys its environment applies a new revision.
func TestAPipelinePageRefreshesOnlyForTheAgentsOfItsBranches(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	repoURL := "https://git.example.com/acme/deploy.git"
	_, err := env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "git"}, Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo"},
		Spec: scmv1alpha1.ScmRepositorySpec{URL: repoURL, Owner: "acme", Name: "deploy", ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev", Active: promoterv1alpha1.CommitState{DrySHA: oldSHA}})
	for _, branch := range []string{"dev", "prod"} {
		flux.CreateGitRepository(t, env, ns, "deploy-"+branch, flux.GitRepositorySpec{URL: repoURL, Branch: "env/" + branch, Interval: time.Hour})
		flux.CreateKustomization(t, env, ns, "apps-"+branch, flux.KustomizationSpec{GitRepository: "deploy-" + branch, TargetNamespace: ns, Interval: time.Hour})
	}
	fluxStatusWrite(t, ns, "apps-dev", flux.Revision("env/dev", strings.Repeat("1", 40)))

	b := browser(t)
	signIn(b, t, url)
	card := `//li[@id="env-env-dev"]//li[@data-agent="Kustomization/` + ns + `/apps-dev"]`
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		chromedp.WaitVisible(chromedp.Search(card+`[contains(., "`+flux.Revision("env/dev", strings.Repeat("1", 40))+`")]`)))
	watch := strings.Split(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-watch')`)), ",")
	assert.NotContains(t, watch, "Kustomization", "the page names the agents of its branches, not every Kustomization")
	followOtherStream(b, t, "Kustomization/"+ns+"/apps-prod")
	before := updates(b, t)

	fluxStatusWrite(t, ns, "apps-prod", flux.Revision("env/prod", strings.Repeat("2", 40)))
	read(b, t, chromedp.Poll[bool](`seen >= 1`))
	applied := flux.Revision("env/dev", strings.Repeat("3", 40))
	fluxStatusWrite(t, ns, "apps-dev", applied)
	within(b, t, chromedp.WaitVisible(chromedp.Search(card+`[contains(., "`+applied+`")]`)))
	assert.Equal(t, before+1, updates(b, t), "one refresh, for the Kustomization that deploys env/dev; none for env/prod's")
}

// followOtherStream opens, in the page, a second stream that counts in window.seen the changes of
// key: the test waits on it to know a change it expects the page to ignore was pushed.
func followOtherStream(b context.Context, t *testing.T, key string) {
	t.Helper()
	read(b, t, chromedp.Evaluate[bool](`window.seen = 0; window.other = new EventSource('/events?watch=`+key+`');
		other.addEventListener('change', function () { seen++; }); true`))
	read(b, t, chromedp.Poll[bool](`other.readyState === 1`))
}

// updates is how many times the open page swapped its <main> live.
func updates(b context.Context, t *testing.T) int {
	t.Helper()
	n, _ := strconv.Atoi(read(b, t, chromedp.Evaluate[string](`document.getElementById('main').getAttribute('data-updates') || '0'`)))
	return n
}

// fluxStatusWrite writes a Kustomization's status as kustomize-controller does after applying
// revision: lastAppliedRevision and a Ready condition.
func fluxStatusWrite(t *testing.T, ns, name, revision string) {
	t.Helper()
	client := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns)
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		k, err := client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		status := map[string]any{"lastAppliedRevision": revision, "conditions": []any{map[string]any{"type": "Ready", "status": "True",
			"reason": "ReconciliationSucceeded", "message": "Applied revision: " + revision, "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
			"observedGeneration": k.GetGeneration()}}}
		if err := unstructured.SetNestedField(k.Object, status, "status"); err != nil {
			return false, err
		}
		_, err = client.UpdateStatus(context.Background(), k, metav1.UpdateOptions{})
		return err == nil, nil
	}, "the status write of "+name)
}

// suspendKustomization sets the suspend annotation on a Kustomization, as a person suspending it does.
func suspendKustomization(t *testing.T, ns, name, reason string) {
	t.Helper()
	_, err := env.Dynamic.Resource(flux.Kustomizations).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/suspended":"`+reason+`"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
}
